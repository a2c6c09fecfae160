//! `NoContraction` on every float multiply, add and subtract of a SPIR-V
//! module, so a driver may not fuse `a * b + c` into one fma (which rounds
//! once where the source rounds twice). WGSL cannot say this; SPIR-V can,
//! per instruction (decoration 42). Pure word surgery: no id is made or
//! renumbered, only `OpDecorate <id> NoContraction` instructions are put at
//! the end of the annotations section (SPIR-V's logical layout: after the
//! debug instructions, before the first type).

const OP_DECORATE: u32 = 71;
const NO_CONTRACTION: u32 = 42;

/// Whether an instruction may appear before the types section: the
/// capabilities, extensions, memory model, entry points and execution
/// modes, the debug instructions and the annotations. The annotations are
/// the last of these, so the decorations go where this prefix ends.
fn before_types(opcode: u32) -> bool {
    matches!(
        opcode,
        // OpSourceContinued, OpSource, OpSourceExtension, OpName,
        // OpMemberName, OpString
        2..=7
        // OpExtension, OpExtInstImport
        | 10 | 11
        // OpMemoryModel, OpEntryPoint, OpExecutionMode, OpCapability
        | 14..=17
        // OpDecorate, OpMemberDecorate, OpDecorationGroup,
        // OpGroupDecorate, OpGroupMemberDecorate
        | 71..=75
        // OpModuleProcessed, OpExecutionModeId, OpDecorateId
        | 330..=332
        // OpDecorateString, OpMemberDecorateString
        | 5632 | 5633
    )
}

/// The float arithmetic a driver could fuse with a neighbour: the
/// multiplies (scalar and vector `OpFMul`, the vector/matrix products,
/// `OpDot`) and the adds and subtracts they could feed. Each has its
/// result type in word 1 and its result id in word 2.
fn contractible(opcode: u32) -> bool {
    matches!(
        opcode,
        // OpFAdd, OpFSub, OpFMul
        129 | 131 | 133
        // OpVectorTimesScalar, OpMatrixTimesScalar, OpVectorTimesMatrix,
        // OpMatrixTimesVector, OpMatrixTimesMatrix, OpOuterProduct, OpDot
        | 142..=148
    )
}

/// Why `words` is not a SPIR-V module this can decorate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Malformed(pub String);

impl std::fmt::Display for Malformed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "malformed SPIR-V: {}", self.0)
    }
}

impl std::error::Error for Malformed {}

/// `words` (a whole module) with `OpDecorate <id> NoContraction` for the
/// result of each instruction [`contractible`] names that has none yet.
pub fn forbid_contraction(words: &[u32]) -> Result<Vec<u32>, Malformed> {
    const HEADER: usize = 5;
    if words.len() < HEADER || words[0] != 0x0723_0203 {
        return Err(Malformed("no SPIR-V header".into()));
    }
    let mut at = HEADER;
    let mut insert_at = None;
    let mut ids = Vec::new();
    let mut decorated = std::collections::HashSet::new();
    while at < words.len() {
        let count = (words[at] >> 16) as usize;
        let opcode = words[at] & 0xffff;
        if count == 0 || at + count > words.len() {
            return Err(Malformed(format!(
                "an instruction of {count} words at word {at}"
            )));
        }
        if insert_at.is_none() && !before_types(opcode) {
            insert_at = Some(at);
        }
        if opcode == OP_DECORATE && count >= 3 && words[at + 2] == NO_CONTRACTION {
            decorated.insert(words[at + 1]);
        }
        if contractible(opcode) {
            if count < 3 {
                return Err(Malformed(format!("opcode {opcode} of {count} words")));
            }
            ids.push(words[at + 2]);
        }
        at += count;
    }
    let insert_at = insert_at.unwrap_or(words.len());
    ids.retain(|id| decorated.insert(*id));
    let mut out = Vec::with_capacity(words.len() + 3 * ids.len());
    out.extend_from_slice(&words[..insert_at]);
    for id in ids {
        out.extend_from_slice(&[(3 << 16) | OP_DECORATE, id, NO_CONTRACTION]);
    }
    out.extend_from_slice(&words[insert_at..]);
    Ok(out)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    const WGSL: &str = "
@group(0) @binding(0) var<storage, read_write> o: array<f32>;
@compute @workgroup_size(1) fn main() {
    o[3] = o[0] * o[1] + o[2];
    o[4] = o[0] - o[1] * o[2];
    let v = vec2<f32>(o[0], o[1]) * o[2];
    o[5] = v.x + v.y;
}
";

    /// `wgsl`'s SPIR-V as naga writes it (float_controls.rs's tests too).
    pub(crate) fn spirv(wgsl: &str) -> Vec<u32> {
        let module = naga::front::wgsl::parse_str(wgsl).unwrap();
        let info = naga::valid::Validator::new(
            naga::valid::ValidationFlags::all(),
            naga::valid::Capabilities::all(),
        )
        .validate(&module)
        .unwrap();
        naga::back::spv::write_vec(&module, &info, &Default::default(), None).unwrap()
    }

    /// (opcode, words) of each instruction after the header.
    pub(crate) fn instructions(words: &[u32]) -> Vec<(u32, Vec<u32>)> {
        let mut at = 5;
        let mut out = Vec::new();
        while at < words.len() {
            let n = (words[at] >> 16) as usize;
            out.push((words[at] & 0xffff, words[at..at + n].to_vec()));
            at += n;
        }
        out
    }

    #[test]
    fn every_float_multiply_add_and_subtract_gets_no_contraction() {
        let before = spirv(WGSL);
        let after = forbid_contraction(&before).unwrap();
        let ins = instructions(&after);
        let results: Vec<u32> = ins
            .iter()
            .filter(|(op, _)| contractible(*op))
            .map(|(_, w)| w[2])
            .collect();
        // 2 adds/subs, 2 scalar multiplies, 1 vector times scalar, 1 add.
        assert_eq!(results.len(), 6, "{ins:?}");
        let decorated: Vec<u32> = ins
            .iter()
            .filter(|(op, w)| *op == OP_DECORATE && w[2] == NO_CONTRACTION)
            .map(|(_, w)| w[1])
            .collect();
        assert_eq!(decorated, results);
        assert_eq!(after.len(), before.len() + 3 * results.len());
        // The header (and its id bound) is kept.
        assert_eq!(after[..5], before[..5]);
    }

    #[test]
    fn the_decorations_end_the_annotations_section() {
        let after = forbid_contraction(&spirv(WGSL)).unwrap();
        let ops: Vec<u32> = instructions(&after).iter().map(|(op, _)| *op).collect();
        let first_type = ops.iter().position(|op| !before_types(*op)).unwrap();
        let last_note = ops.iter().rposition(|op| (71..=75).contains(op)).unwrap();
        assert_eq!(last_note + 1, first_type);
        // Nothing of the annotations comes before a debug instruction.
        let first_note = ops.iter().position(|op| (71..=75).contains(op)).unwrap();
        assert!(ops[first_note..].iter().all(|op| !(2..=7).contains(op)));
    }

    #[test]
    fn the_result_still_parses_and_validates() {
        let after = forbid_contraction(&spirv(WGSL)).unwrap();
        let module = naga::front::spv::parse_u8_slice(
            bytemuck_words(&after).as_slice(),
            &Default::default(),
        )
        .unwrap();
        naga::valid::Validator::new(
            naga::valid::ValidationFlags::all(),
            naga::valid::Capabilities::all(),
        )
        .validate(&module)
        .unwrap();
    }

    fn bytemuck_words(words: &[u32]) -> Vec<u8> {
        words.iter().flat_map(|w| w.to_le_bytes()).collect()
    }

    #[test]
    fn twice_is_once() {
        let once = forbid_contraction(&spirv(WGSL)).unwrap();
        assert_eq!(forbid_contraction(&once).unwrap(), once);
    }

    #[test]
    fn integer_arithmetic_is_left_alone() {
        let wgsl = "
@group(0) @binding(0) var<storage, read_write> o: array<u32>;
@compute @workgroup_size(1) fn main() { o[2] = o[0] * o[1] + o[2]; }
";
        let before = spirv(wgsl);
        assert_eq!(forbid_contraction(&before).unwrap(), before);
    }

    #[test]
    fn malformed_words_are_refused() {
        assert!(forbid_contraction(&[1, 2, 3]).is_err());
        let mut words = spirv(WGSL);
        // An instruction that says it has 5 words, of which 1 is there.
        words.push((5 << 16) | 1);
        assert!(forbid_contraction(&words).is_err());
    }
}
