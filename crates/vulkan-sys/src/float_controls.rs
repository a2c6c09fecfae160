//! IEEE behaviour a Vulkan driver keeps only when a module asks for it:
//! SPIR-V's float-controls execution modes (SPV_KHR_float_controls, core
//! in Vulkan 1.2). Without `SignedZeroInfNanPreserve` a driver may treat
//! `-0` as `+0` and assume no NaN or infinity occurs (NVIDIA's folds
//! `if v < lo { lo } …` into a `max` that drops a NaN); without
//! `DenormPreserve` it may flush subnormal inputs and results to zero (an
//! f32 subnormal cast to f64 became 0 there). The kernel language
//! promises the IEEE results on every backend, so a kernel's module asks
//! for both, at each width the device can preserve.
//!
//! Two parts: [`query`] reads what the device supports (through wgpu's
//! `unsafe` access to its Vulkan handles), and [`request`] adds the
//! capabilities, the extension and the execution modes to a module.
//! Like no_contraction.rs, pure word surgery: no id is made or renumbered.

use ash::vk;

use crate::no_contraction::Malformed;

/// The widths at which a device can keep signed zeros, infinities and NaN,
/// and subnormals, when a module asks (VkPhysicalDeviceFloatControlsProperties).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FloatControls {
    pub signed_zero_inf_nan_f32: bool,
    pub signed_zero_inf_nan_f64: bool,
    pub denorm_f32: bool,
    pub denorm_f64: bool,
}

impl FloatControls {
    /// Whether a module can ask for anything at all.
    pub fn any(&self) -> bool {
        self.signed_zero_inf_nan_f32
            || self.signed_zero_inf_nan_f64
            || self.denorm_f32
            || self.denorm_f64
    }
}

/// What `device` supports; nothing where it is not a Vulkan 1.2 device
/// (the modes' extension is core there) or not a Vulkan device at all.
pub fn query(device: &wgpu::Device) -> FloatControls {
    // SAFETY: the hal device is only read (its instance, physical device
    // and API version) while the guard is held; nothing it owns is
    // destroyed or changed.
    let Some(hal) = (unsafe { device.as_hal::<wgpu::hal::api::Vulkan>() }) else {
        return FloatControls::default();
    };
    let shared = hal.shared_instance();
    let instance = shared.raw_instance();
    let physical = hal.raw_physical_device();
    // SAFETY: `physical` is the device's own physical device, of `instance`.
    let api = unsafe { instance.get_physical_device_properties(physical) }.api_version;
    if api.min(shared.instance_api_version()) < vk::API_VERSION_1_2 {
        return FloatControls::default();
    }
    let mut controls = vk::PhysicalDeviceFloatControlsProperties::default();
    let mut props2 = vk::PhysicalDeviceProperties2::default().push_next(&mut controls);
    // SAFETY: Vulkan 1.2 (checked above) has vkGetPhysicalDeviceProperties2
    // and fills the chained float-controls struct; both outlive the call.
    unsafe { instance.get_physical_device_properties2(physical, &mut props2) };
    FloatControls {
        signed_zero_inf_nan_f32: controls.shader_signed_zero_inf_nan_preserve_float32 != 0,
        signed_zero_inf_nan_f64: controls.shader_signed_zero_inf_nan_preserve_float64 != 0,
        denorm_f32: controls.shader_denorm_preserve_float32 != 0,
        denorm_f64: controls.shader_denorm_preserve_float64 != 0,
    }
}

const OP_EXTENSION: u32 = 10;
const OP_ENTRY_POINT: u32 = 15;
const OP_EXECUTION_MODE: u32 = 16;
const OP_CAPABILITY: u32 = 17;
const CAPABILITY_FLOAT64: u32 = 10;
const CAPABILITY_DENORM_PRESERVE: u32 = 4464;
const CAPABILITY_SIGNED_ZERO_INF_NAN_PRESERVE: u32 = 4466;
const MODE_DENORM_PRESERVE: u32 = 4459;
const MODE_SIGNED_ZERO_INF_NAN_PRESERVE: u32 = 4461;
const EXTENSION: &str = "SPV_KHR_float_controls";

/// `words` (a whole module) asking for every preservation `supported`
/// has, for the widths the module computes in (64 only where it declares
/// `Float64`), on each of its entry points.
pub fn request(words: &[u32], supported: &FloatControls) -> Result<Vec<u32>, Malformed> {
    const HEADER: usize = 5;
    if words.len() < HEADER || words[0] != 0x0723_0203 {
        return Err(Malformed("no SPIR-V header".into()));
    }
    let mut at = HEADER;
    let (mut capabilities_end, mut modes_at, mut float64) = (None, None, false);
    let mut entries = Vec::new();
    while at < words.len() {
        let count = (words[at] >> 16) as usize;
        let opcode = words[at] & 0xffff;
        if count == 0 || at + count > words.len() {
            return Err(Malformed(format!(
                "an instruction of {count} words at word {at}"
            )));
        }
        match opcode {
            OP_CAPABILITY if count == 2 => float64 |= words[at + 1] == CAPABILITY_FLOAT64,
            OP_ENTRY_POINT if count >= 3 => entries.push(words[at + 2]),
            _ => {}
        }
        if opcode != OP_CAPABILITY && capabilities_end.is_none() {
            capabilities_end = Some(at);
        }
        // The execution modes follow the entry points (SPIR-V's logical
        // layout); new ones go right after the last entry point.
        if opcode == OP_ENTRY_POINT {
            modes_at = Some(at + count);
        }
        at += count;
    }
    let (Some(capabilities_end), Some(modes_at)) = (capabilities_end, modes_at) else {
        return Err(Malformed("no entry point".into()));
    };
    let mut modes = Vec::new();
    for (wanted, mode, width) in [
        (
            supported.signed_zero_inf_nan_f32,
            MODE_SIGNED_ZERO_INF_NAN_PRESERVE,
            32,
        ),
        (
            supported.signed_zero_inf_nan_f64 && float64,
            MODE_SIGNED_ZERO_INF_NAN_PRESERVE,
            64,
        ),
        (supported.denorm_f32, MODE_DENORM_PRESERVE, 32),
        (supported.denorm_f64 && float64, MODE_DENORM_PRESERVE, 64),
    ] {
        if wanted {
            modes.push((mode, width));
        }
    }
    if modes.is_empty() {
        return Ok(words.to_vec());
    }
    let mut capabilities = Vec::new();
    if modes
        .iter()
        .any(|&(m, _)| m == MODE_SIGNED_ZERO_INF_NAN_PRESERVE)
    {
        capabilities.extend([
            (2 << 16) | OP_CAPABILITY,
            CAPABILITY_SIGNED_ZERO_INF_NAN_PRESERVE,
        ]);
    }
    if modes.iter().any(|&(m, _)| m == MODE_DENORM_PRESERVE) {
        capabilities.extend([(2 << 16) | OP_CAPABILITY, CAPABILITY_DENORM_PRESERVE]);
    }
    // The name as a nul-terminated string packed into little-endian words.
    let mut name = EXTENSION.as_bytes().to_vec();
    name.resize(EXTENSION.len() / 4 * 4 + 4, 0);
    let name: Vec<u32> = name
        .chunks(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    let mut extension = vec![((1 + name.len() as u32) << 16) | OP_EXTENSION];
    extension.extend(name);
    let mut execution_modes = Vec::new();
    for &entry in &entries {
        for &(mode, width) in &modes {
            execution_modes.extend([(4 << 16) | OP_EXECUTION_MODE, entry, mode, width]);
        }
    }
    let mut out = Vec::with_capacity(
        words.len() + capabilities.len() + extension.len() + execution_modes.len(),
    );
    out.extend_from_slice(&words[..capabilities_end]);
    out.extend(capabilities);
    out.extend(extension);
    out.extend_from_slice(&words[capabilities_end..modes_at]);
    out.extend(execution_modes);
    out.extend_from_slice(&words[modes_at..]);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::no_contraction::tests::{instructions, spirv};

    const ALL: FloatControls = FloatControls {
        signed_zero_inf_nan_f32: true,
        signed_zero_inf_nan_f64: true,
        denorm_f32: true,
        denorm_f64: true,
    };

    /// Words added for `modes`: each capability once, the extension
    /// (1 + 6 words), and 4 words a mode on the one entry point.
    fn extra_words(modes: &[(u32, u32)]) -> usize {
        let kinds = [4461, 4459]
            .iter()
            .filter(|k| modes.iter().any(|(m, _)| m == *k))
            .count();
        2 * kinds + 7 + 4 * modes.len()
    }

    /// SPIR-V's logical layout (naga's reader refuses the extension, so it
    /// cannot check this): capabilities, extensions, imports, the memory
    /// model, entry points, execution modes, then the rest.
    fn assert_in_layout_order(words: &[u32]) {
        let rank = |op: u32| match op {
            OP_CAPABILITY => 0,
            OP_EXTENSION => 1,
            11 => 2,
            14 => 3,
            OP_ENTRY_POINT => 4,
            OP_EXECUTION_MODE => 5,
            _ => 6,
        };
        let mut last = 0;
        for (opcode, _) in instructions(words) {
            let r = rank(opcode);
            assert!(r >= last, "opcode {opcode} out of order");
            last = r;
        }
    }

    /// The requested module keeps SPIR-V's layout and carries exactly the
    /// modes asked for, once per entry point.
    #[test]
    fn the_module_asks_for_what_the_device_has() {
        let f32_only = "@group(0) @binding(0) var<storage, read_write> o: array<f32>;
@compute @workgroup_size(1) fn main() { o[1] = min(o[0], o[1]); }";
        let with_f64 = "@group(0) @binding(0) var<storage, read_write> o: array<f64>;
@compute @workgroup_size(1) fn main() { o[1] = min(o[0], o[1]); }";
        for (wgsl, supported, want) in [
            (f32_only, ALL, vec![(4461, 32), (4459, 32)]),
            (
                with_f64,
                ALL,
                vec![(4461, 32), (4461, 64), (4459, 32), (4459, 64)],
            ),
            (
                with_f64,
                FloatControls {
                    denorm_f32: false,
                    ..ALL
                },
                vec![(4461, 32), (4461, 64), (4459, 64)],
            ),
        ] {
            let words = spirv(wgsl);
            let out = request(&words, &supported).unwrap();
            let modes: Vec<(u32, u32)> = instructions(&out)
                .into_iter()
                .filter(|(op, w)| *op == OP_EXECUTION_MODE && matches!(w[2], 4459 | 4461))
                .map(|(_, w)| (w[2], w[3]))
                .collect();
            assert_eq!(modes, want, "{wgsl}");
            assert_eq!(
                out[5..].len(),
                words[5..].len() + extra_words(&want),
                "{wgsl}"
            );
            assert_in_layout_order(&out);
        }
    }

    #[test]
    fn nothing_supported_leaves_the_module_alone() {
        let words = spirv(
            "@group(0) @binding(0) var<storage, read_write> o: array<f32>;
@compute @workgroup_size(1) fn main() { o[0] = -o[0]; }",
        );
        assert_eq!(request(&words, &FloatControls::default()).unwrap(), words);
        assert!(request(&words[..3], &ALL).is_err());
    }
}
