//! The built-in ops: the WGSL of shaders/ compiled once per device and
//! type, dispatched over 256-byte-aligned slices of the arrays where an
//! array is larger than one binding (lavapipe binds 128 MiB at once).

use std::sync::Arc;

use super::Vulkan;
use super::buffer::VkBuffer;
use super::device::{IMMEDIATE_BYTES, Pipeline, VkDevice};
use super::dispatch_geometry::{chunks, fits, grid, slice};
use super::errors::unsupported;
use super::shaders::elementwise::{Map, VEC4_PER_INVOCATION, pack};
use super::shaders::{Imm, Num, fill as fill_shader, matmul as mm, reduce as red};
use super::stream::VkStream;
use super::tracker::Tracker;
use super::wgpu_buffer::{MapSignal, create, read_mapped, readback};
use crate::backend::contract::BuiltinOps;
use crate::element::Element;
use crate::error::Result;
use crate::ops::{Binary, Float, Reduce, Unary};
use unigpu_core::{GemmOperand, GemmShape};

type Stream = Arc<VkStream>;

/// The element type's shaders, if this adapter can run them.
fn num_for<T: Element>(device: &VkDevice) -> Result<Num> {
    let num = Num::of(T::DTYPE)
        .ok_or_else(|| unsupported(format!("arithmetic on {} arrays", T::DTYPE)))?;
    let needs = wgpu::Features::SHADER_F64 | wgpu::Features::SHADER_INT64;
    if num == Num::F64 && !device.has(needs) {
        return Err(unsupported(format!(
            "f64 arithmetic: adapter {} lacks shader-f64 or shader-int64 (wgpu's SHADER_F64, \
             SHADER_INT64); f64 arrays still upload, download and copy",
            device.info.name
        )));
    }
    Ok(num)
}

fn pipeline(
    device: &VkDevice,
    key: String,
    wgsl: impl FnOnce() -> String,
    bindings: &[bool],
) -> Result<Arc<Pipeline>> {
    device.pipeline(&key, || {
        let types: Vec<wgpu::BindingType> =
            bindings.iter().map(|&ro| VkDevice::storage(ro)).collect();
        device.build_pipeline(
            &key,
            wgpu::ShaderSource::Wgsl(wgsl().into()),
            "main",
            &types,
            IMMEDIATE_BYTES,
            false,
        )
    })
}

/// One dispatch: its bind group, immediates and workgroup grid.
struct Step {
    bind: wgpu::BindGroup,
    imm: Imm,
    groups: (u32, u32, u32),
}

/// Records `steps` of `pipeline` in one compute pass.
fn encode(enc: &mut wgpu::CommandEncoder, pipeline: &Pipeline, steps: &[Step]) {
    let mut pass = enc.begin_compute_pass(&wgpu::ComputePassDescriptor::default());
    pass.set_pipeline(&pipeline.pipeline);
    for s in steps {
        pass.set_bind_group(0, &s.bind, &[]);
        pass.set_immediates(0, s.imm.bytes());
        pass.dispatch_workgroups(s.groups.0, s.groups.1, s.groups.2);
    }
}

/// A bind group of `resources` for `pipeline`, or why wgpu refuses it:
/// checked here, where the op can still fail alone, rather than spoiling
/// the stream's whole submission.
fn bind(
    device: &VkDevice,
    pipeline: &Pipeline,
    resources: Vec<wgpu::BindingResource<'_>>,
) -> Result<wgpu::BindGroup> {
    let entries: Vec<wgpu::BindGroupEntry<'_>> = resources
        .into_iter()
        .enumerate()
        .map(|(i, resource)| wgpu::BindGroupEntry {
            binding: i as u32,
            resource,
        })
        .collect();
    device.checked("binding an op's arrays", || {
        device.device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: None,
            layout: &pipeline.layout,
            entries: &entries,
        })
    })
}

/// An element-wise shader over `len` elements of `buffers` (in binding
/// order), as replayable work on `s`.
#[allow(clippy::too_many_arguments)]
fn map(
    s: &Stream,
    map: Map,
    num: Num,
    len: usize,
    alpha: f64,
    buffers: &[&wgpu::Buffer],
    reads: &[&Tracker],
    writes: &[&Tracker],
) -> Result<()> {
    let device = &s.device;
    let fma = device.fma_kind(num);
    // Every chunk but the last holds a multiple of 64 elements, so all do
    // of four when `len` is.
    let vec4 = num == Num::F32 && len.is_multiple_of(4);
    let p = pipeline(
        device,
        format!(
            "{}/{}/{fma:?}{}",
            map.name(),
            num.name(),
            if vec4 { "/vec4" } else { "" }
        ),
        || map.wgsl(num, fma, vec4),
        map.bindings(),
    )?;
    let unit = if num.packed() { 4 } else { num.acc_bytes() };
    let mut steps = Vec::new();
    for (first, count) in chunks(device, num.units(len), unit) {
        // The shader's units: vec4s, each invocation taking two.
        let (units, invocations) = if vec4 {
            let v = count as u64 / 4;
            (v, v.div_ceil(VEC4_PER_INVOCATION))
        } else {
            (count as u64, count as u64)
        };
        let groups = grid(device, invocations)?;
        let resources = buffers
            .iter()
            .map(|b| slice(b, first, count, unit))
            .collect();
        steps.push(Step {
            bind: bind(device, &p, resources)?,
            imm: Imm::default()
                .u32(0, units as u32)
                .u32(4, groups.2)
                .acc(num, alpha),
            groups: (groups.0, groups.1, 1),
        });
    }
    if steps.is_empty() {
        return Ok(());
    }
    s.submit_replayable(
        reads,
        writes,
        Arc::new(move |enc| {
            encode(enc, &p, &steps);
            Ok(())
        }),
    )
}

impl BuiltinOps for Vulkan {
    fn fill<T: Element>(s: &Stream, x: &mut VkBuffer<T>, value: T) -> Result<()> {
        let device = &s.device;
        let p = pipeline(device, "fill".into(), || fill_shader::WGSL.into(), &[false])?;
        let (period, w) = fill_shader::pattern(bytemuck::bytes_of(&value));
        let words = x.bytes().div_ceil(4);
        let mut steps = Vec::new();
        for (first, count) in chunks(device, words, 4) {
            let groups = grid(device, count as u64)?;
            steps.push(Step {
                bind: bind(device, &p, vec![slice(&x.buffer, first, count, 4)])?,
                imm: Imm::default()
                    .u32(0, count as u32)
                    .u32(4, groups.2)
                    .u32(8, period)
                    .u32(12, w[0])
                    .u32(16, w[1]),
                groups: (groups.0, groups.1, 1),
            });
        }
        if steps.is_empty() {
            return Ok(());
        }
        s.submit_replayable(
            &[],
            &[&x.uses],
            Arc::new(move |enc| {
                encode(enc, &p, &steps);
                Ok(())
            }),
        )
    }

    fn binary<T: Float>(
        s: &Stream,
        op: Binary,
        a: &VkBuffer<T>,
        b: &VkBuffer<T>,
        out: &mut VkBuffer<T>,
    ) -> Result<()> {
        let num = num_for::<T>(&s.device)?;
        map(
            s,
            Map::Binary(op),
            num,
            out.len,
            0.0,
            &[&a.buffer, &b.buffer, &out.buffer],
            &[&a.uses, &b.uses],
            &[&out.uses],
        )
    }

    fn unary<T: Float>(
        s: &Stream,
        op: Unary,
        x: &VkBuffer<T>,
        out: &mut VkBuffer<T>,
    ) -> Result<()> {
        let num = num_for::<T>(&s.device)?;
        map(
            s,
            Map::Unary(op),
            num,
            out.len,
            0.0,
            &[&x.buffer, &out.buffer],
            &[&x.uses],
            &[&out.uses],
        )
    }

    fn axpy<T: Float>(s: &Stream, alpha: T, x: &VkBuffer<T>, y: &mut VkBuffer<T>) -> Result<()> {
        let num = num_for::<T>(&s.device)?;
        map(
            s,
            Map::Axpy,
            num,
            y.len,
            alpha.to_acc().into(),
            &[&x.buffer, &y.buffer],
            &[&x.uses],
            &[&y.uses],
        )
    }

    fn scale<T: Float>(s: &Stream, alpha: T, x: &mut VkBuffer<T>) -> Result<()> {
        let num = num_for::<T>(&s.device)?;
        map(
            s,
            Map::Scale,
            num,
            x.len,
            alpha.to_acc().into(),
            &[&x.buffer],
            &[],
            &[&x.uses],
        )
    }

    fn reduce<T: Float>(
        s: &Stream,
        op: Reduce,
        x: &VkBuffer<T>,
        y: Option<&VkBuffer<T>>,
    ) -> Result<T> {
        let device = &s.device;
        let num = num_for::<T>(device)?;
        let acc = num.acc_num();
        let first = pipeline(
            device,
            format!("reduce/{op:?}/{}", num.name()),
            || red::wgsl(op, num),
            if op == Reduce::Dot {
                &[true, true, false]
            } else {
                &[true, false]
            },
        )?;
        let fold_op = if op == Reduce::Max {
            Reduce::Max
        } else {
            Reduce::Sum
        };
        let fold = pipeline(
            device,
            format!("reduce/{fold_op:?}/{}", acc.name()),
            || red::wgsl(fold_op, acc),
            &[true, false],
        )?;
        let unit = if num.packed() { 4 } else { num.acc_bytes() };
        let parts = chunks(device, num.units(x.len), unit);
        let groups: Vec<usize> = parts
            .iter()
            .map(|&(_, count)| count.div_ceil(256).clamp(1, red::MAX_GROUPS))
            .collect();
        let total: usize = groups.iter().sum();
        let acc_bytes = num.acc_bytes();
        let storage = wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC;
        let partials = create(
            device,
            total * acc_bytes,
            (total.max(1) * acc_bytes) as u64,
            storage,
            false,
        )?;
        let result = create(device, acc_bytes, acc_bytes as u64, storage, false)?;
        let back = readback(device, acc_bytes)?;
        let mut steps = Vec::new();
        let mut base = 0usize;
        for (&(start, count), &g) in parts.iter().zip(&groups) {
            let mut resources = vec![slice(&x.buffer, start, count, unit)];
            if let Some(y) = y {
                resources.push(slice(&y.buffer, start, count, unit));
            }
            resources.push(partials.as_entire_binding());
            // Elements in this slice: every unit is full but the last
            // slice's last word of a 16-bit array.
            let elems = if num.packed() {
                (x.len - 2 * start).min(2 * count)
            } else {
                count
            };
            steps.push(Step {
                bind: bind(device, &first, resources)?,
                imm: Imm::default()
                    .u32(0, count as u32)
                    .u32(4, elems as u32)
                    .u32(8, base as u32),
                groups: (g as u32, 1, 1),
            });
            base += g;
        }
        let last = Step {
            bind: bind(
                device,
                &fold,
                vec![partials.as_entire_binding(), result.as_entire_binding()],
            )?,
            imm: Imm::default()
                .u32(0, total as u32)
                .u32(4, total as u32)
                .u32(8, 0),
            groups: (1, 1, 1),
        };
        let mapped = MapSignal::default();
        let (on_mapped, target) = (mapped.callback(), back.clone());
        let mut reads = vec![&x.uses];
        reads.extend(y.map(|y| &y.uses));
        s.submit(
            &reads,
            &[],
            Box::new(move |enc| {
                if !steps.is_empty() {
                    encode(enc, &first, &steps);
                }
                encode(enc, &fold, std::slice::from_ref(&last));
                enc.copy_buffer_to_buffer(&result, 0, &target, 0, acc_bytes as u64);
                enc.map_buffer_on_submit(&target, wgpu::MapMode::Read, .., on_mapped);
                Ok(())
            }),
        )?;
        mapped.wait("a reduction")?;
        let mut bytes = [0u8; 8];
        read_mapped(&back, &mut bytes[..acc_bytes], "a reduction")?;
        let value: T::Acc = bytemuck::pod_read_unaligned(&bytes[..acc_bytes]);
        Ok(T::from_acc(value))
    }

    fn matmul<T: Float>(
        s: &Stream,
        a: &VkBuffer<T>,
        b: &VkBuffer<T>,
        c: &mut VkBuffer<T>,
        shape: &GemmShape,
    ) -> Result<()> {
        let device = &s.device;
        let num = num_for::<T>(device)?;
        let GemmShape {
            batch,
            m,
            k,
            n,
            a: sa,
            b: sb,
        } = *shape;
        if batch == 0 || m == 0 || n == 0 {
            return Ok(());
        }
        for (what, bytes) in [("a", a.bytes()), ("b", b.bytes()), ("c", c.bytes())] {
            fits(device, &format!("matmul ({what})"), bytes)?;
        }
        let limit = device.limits.max_compute_workgroups_per_dimension as usize;
        let (gx, gy) = (n.div_ceil(mm::TILE as usize), m.div_ceil(mm::TILE as usize));
        if gx > limit || gy > limit {
            return Err(unsupported(format!(
                "matmul {m}x{k}x{n}: more than {limit} tiles of {} along one side",
                mm::TILE
            )));
        }
        // The shaders index in u32: every element an operand reaches, and
        // every word of the immediates, must fit.
        let reach = [sa.reach(batch, m, k), sb.reach(batch, k, n), shape.c_len()];
        let sizes = [k, sa.ld, sa.batch_stride, sb.ld, sb.batch_stride];
        if reach
            .iter()
            .any(|r| r.is_none_or(|r| r > u32::MAX as usize))
            || sizes.iter().any(|&v| v > u32::MAX as usize)
        {
            return Err(unsupported(format!(
                "matmul {batch}x{m}x{k}x{n}: an index past 2^32"
            )));
        }
        let aligned = |op: &GemmOperand| {
            !op.transposed
                && [op.offset, op.batch_stride, op.ld]
                    .iter()
                    .all(|v| v.is_multiple_of(4))
        };
        let vec4 = num == Num::F32
            && k.is_multiple_of(4)
            && n.is_multiple_of(4)
            && aligned(&sa)
            && aligned(&sb);
        let p = if vec4 {
            pipeline(
                device,
                "matmul/f32/vec4".into(),
                mm::wgsl_vec4,
                &[true, true, false],
            )?
        } else {
            pipeline(
                device,
                format!("matmul/{}", num.name()),
                || mm::wgsl(num),
                &[true, true, false],
            )?
        };
        let imm = Imm::default()
            .u32(0, m as u32)
            .u32(4, n as u32)
            .u32(8, k as u32)
            .u32(16, sa.offset as u32)
            .u32(20, sa.batch_stride as u32)
            .u32(24, sa.ld as u32)
            .u32(28, sa.transposed as u32)
            .u32(32, sb.offset as u32)
            .u32(36, sb.batch_stride as u32)
            .u32(40, sb.ld as u32)
            .u32(44, sb.transposed as u32);
        // One dispatch per `limit` batches (the grid's z), each told its
        // first batch.
        let dispatches = |c: &wgpu::Buffer| -> Result<Vec<Step>> {
            let resources = || {
                vec![
                    a.buffer.as_entire_binding(),
                    b.buffer.as_entire_binding(),
                    c.as_entire_binding(),
                ]
            };
            (0..batch)
                .step_by(limit)
                .map(|z0| {
                    Ok(Step {
                        bind: bind(device, &p, resources())?,
                        imm: imm.u32(12, z0 as u32),
                        groups: (gx as u32, gy as u32, (batch - z0).min(limit) as u32),
                    })
                })
                .collect()
        };
        if !num.packed() {
            let steps = dispatches(&c.buffer)?;
            return s.submit_replayable(
                &[&a.uses, &b.uses],
                &[&c.uses],
                Arc::new(move |enc| {
                    encode(enc, &p, &steps);
                    Ok(())
                }),
            );
        }
        // 16-bit results: f32 into a scratch array, then packed in pairs.
        let mn = batch * m * n;
        fits(device, "matmul (f32 results)", mn * 4)?;
        let scratch = create(
            device,
            mn * 4,
            (mn * 4) as u64,
            wgpu::BufferUsages::STORAGE,
            false,
        )?;
        let packer = pipeline(
            device,
            format!("pack/{}", num.name()),
            || pack(num),
            &[true, false],
        )?;
        let words = num.units(mn);
        let pg = grid(device, words as u64)?;
        let first = dispatches(&scratch)?;
        let second = Step {
            bind: bind(
                device,
                &packer,
                vec![scratch.as_entire_binding(), c.buffer.as_entire_binding()],
            )?,
            imm: Imm::default()
                .u32(0, words as u32)
                .u32(4, pg.2)
                .u32(8, mn as u32),
            groups: (pg.0, pg.1, 1),
        };
        s.submit_replayable(
            &[&a.uses, &b.uses],
            &[&c.uses],
            Arc::new(move |enc| {
                encode(enc, &p, &first);
                encode(enc, &packer, std::slice::from_ref(&second));
                Ok(())
            }),
        )
    }
}
