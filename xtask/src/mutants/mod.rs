//! `cargo xtask mutants`: proves the test suite can fail. Each mutation is
//! a deliberate bug written into one backend's source (a reduction that
//! drops its last block, a `wait` that does nothing, ...); the tests run
//! against it and must fail. The source is restored after each mutation,
//! also when the run is interrupted by an error. A mutation the tests
//! survive is a hole in the suite, and the command fails.
//!
//! The CPU backend's mutations run here (in CI). The vulkan backend's run
//! here too with `--vulkan`, against the `::vulkan` tests, on whatever
//! Vulkan adapter opens (Mesa's lavapipe in CI: `.ci/vulkan-tests.sh`). The
//! CUDA and torch backends' need a GPU: `--gpu-pack` builds the test
//! binaries once per mutation into `.gpu-mutants/`, with a script that runs
//! them on the GPU machine and reports the same way (see `gpu.rs`).
//!
//! The mutations patch text, so each names the exact lines it replaces; a
//! source change that moves them makes the command fail with "not found"
//! rather than test nothing.

mod gpu;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, bail};

/// The backend whose tests must catch a mutation.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Target {
    Cpu,
    Cuda,
    Torch,
    Vulkan,
}

impl Target {
    fn name(self) -> &'static str {
        match self {
            Target::Cpu => "cpu",
            Target::Cuda => "cuda",
            Target::Torch => "torch",
            Target::Vulkan => "vulkan",
        }
    }
}

/// One deliberate bug.
struct Mutation {
    name: &'static str,
    target: Target,
    file: &'static str,
    /// Text that occurs exactly once in `file`.
    original: &'static str,
    mutated: &'static str,
    /// The test binaries checked against it: the facade's, by name, or
    /// `safe:gpu` for the CUDA RAII crate's. Naming the binaries that catch
    /// it, rather than running them all, keeps each CPU mutation to one
    /// rebuild of the facade and one link (about half of CI's mutation
    /// step was linking and running binaries that could not catch it).
    /// A vulkan mutation that leaves it empty runs every `::vulkan` test
    /// and tests/vulkan.rs; one that names binaries runs their `::vulkan`
    /// variants only.
    tests: &'static [&'static str],
}

const MUTATIONS: &[Mutation] = &[
    // ---- the CPU backend (run here and in CI)
    Mutation {
        name: "a reduction that drops its last block",
        target: Target::Cpu,
        file: "crates/unigpu/src/backend/cpu/ops.rs",
        original: "            let xs = read(&dx);\n",
        mutated: "            let whole = read(&dx);\n            let xs = &whole[..whole.len().saturating_sub(1024).max(whole.len() / 2)];\n",
        tests: &["ops"],
    },
    Mutation {
        name: "a graph replay that skips the first recorded job",
        target: Target::Cpu,
        file: "crates/unigpu/src/backend/cpu/graph.rs",
        original: "        graph.iter().try_for_each(|r| replay(stream, r))\n",
        mutated: "        graph.iter().skip(1).try_for_each(|r| replay(stream, r))\n",
        tests: &["graphs"],
    },
    Mutation {
        name: "a wait that does nothing",
        target: Target::Cpu,
        file: "crates/unigpu/src/backend/cpu/stream.rs",
        original: "            Some(fence) => stream.enqueue(Box::new(move || {\n                fence.wait();\n                Ok(())\n            })),",
        mutated: "            Some(fence) => stream.enqueue(Box::new(move || {\n                drop(fence);\n                Ok(())\n            })),",
        tests: &["streams"],
    },
    Mutation {
        name: "a sum whose running total is kept in the element type (bf16 in bf16)",
        target: Target::Cpu,
        file: "crates/unigpu/src/backend/cpu/ops.rs",
        original: "    simd(|| xs.chunks(BLOCK).map(block_sum).fold(0.0, |a, b| a + b))\n",
        mutated: "    simd(|| {\n        xs.chunks(BLOCK).map(block_sum).fold(0.0, |s: f64, b| {\n            T::from_acc(acc_from_f64::<T>(s + b)).to_acc().into()\n        })\n    })\n",
        tests: &["ops"],
    },
    Mutation {
        name: "a matmul with one wrong tile",
        target: Target::Cpu,
        file: "crates/unigpu/src/backend/cpu/ops.rs",
        original: "        par,\n    );\n}\n",
        mutated: "        par,\n    );\n    for i in m.saturating_sub(8)..m {\n        for j in n.saturating_sub(8)..n {\n            c[i * n + j] = c[0].clone();\n        }\n    }\n}\n",
        tests: &["ops"],
    },
    Mutation {
        name: "a copy that skips its last element",
        target: Target::Cpu,
        file: "crates/unigpu/src/backend/cpu/buffer.rs",
        original: "            to.write().copy_from_slice(&from.read());\n",
        mutated: "            let (mut to, from) = (to.write(), from.read());\n            let n = from.len().saturating_sub(1);\n            to[..n].copy_from_slice(&from[..n]);\n",
        tests: &["arrays"],
    },
    Mutation {
        name: "a host view of a unified array that does not wait for its pending writes",
        target: Target::Cpu,
        file: "crates/unigpu/src/backend/cpu/buffer.rs",
        original: "        buffer.uses.wait_writes();\n        Ok(buffer.data.read())\n",
        mutated: "        Ok(buffer.data.read())\n",
        tests: &["unified"],
    },
    Mutation {
        name: "a DLPack export with DlpackSync::Host that does not wait for pending work",
        target: Target::Cpu,
        file: "crates/unigpu/src/backend/cpu/buffer.rs",
        original: "            DlpackSync::Host => buffer.uses.wait_all(),\n",
        mutated: "            DlpackSync::Host => {}\n",
        tests: &["dlpack"],
    },
    Mutation {
        name: "an array's own DLPack export imported again with use tracking of its own",
        target: Target::Cpu,
        file: "crates/unigpu/src/backend/cpu/buffer.rs",
        original: "                CpuBuffer::shared(export.array.clone(), export.with.clone())\n",
        mutated: "                CpuBuffer::shared(export.array.clone(), Tracker::default())\n",
        tests: &["dlpack"],
    },
    // A consumer's slice of an own export taken back as the whole array
    // (`a_slice_of_an_own_export_is_that_slice`).
    Mutation {
        name: "a slice of an array's own DLPack export imported as the whole array",
        target: Target::Cpu,
        file: "crates/unigpu/src/backend/cpu/buffer.rs",
        original: "            Some(export) if export.spans(&view) => {\n",
        mutated: "            Some(export) if export.spans(&view) || true => {\n",
        tests: &["dlpack"],
    },
    Mutation {
        name: "a write that does not wait for the pending reads of what it writes",
        target: Target::Cpu,
        file: "crates/unigpu/src/backend/cpu/buffer.rs",
        original: "    deps.extend(writes.iter().flat_map(|t| t.pending_all()));\n",
        mutated: "    deps.extend(writes.iter().filter_map(|t| t.pending_write()));\n",
        tests: &["streams"],
    },
    Mutation {
        name: "elapsed_ms in microseconds",
        target: Target::Cpu,
        file: "crates/unigpu/src/backend/cpu/event.rs",
        original: "            (stop - start).as_secs_f64() * 1e3\n",
        mutated: "            (stop - start).as_secs_f64() * 1e6\n",
        tests: &["streams"],
    },
    Mutation {
        name: "the native normal loop's cosine with the wrong sign in quadrants 1 and 3",
        target: Target::Cpu,
        file: "crates/unigpu/src/random/cpu.rs",
        original: "    let c = if (q + 1) & 2 != 0 { -c } else { c };\n",
        mutated: "    let c = if q & 2 != 0 { -c } else { c };\n",
        tests: &["random"],
    },
    // ---- the kernel macro's CPU form (crates/kernel-macros/src/cpu.rs),
    // against the kernel tests' `::cpu` variants: an operator mapped
    // wrongly, a wrapping or shift rule broken, a barrier that does not
    // split its phase. The anchors are single match arms or lines, so
    // edits elsewhere in the emitter do not move them.
    Mutation {
        name: "kernel macro, cpu emitter: `<=` printed as `<`",
        target: Target::Cpu,
        file: "crates/kernel-macros/src/cpu.rs",
        original: "        Le => quote!((#a <= #b)),\n",
        mutated: "        Le => quote!((#a < #b)),\n",
        tests: &["kernel_macro", "kernel_prop"],
    },
    Mutation {
        name: "kernel macro, cpu grid-stride fast path: every constant load reads index 0",
        target: Target::Cpu,
        file: "crates/kernel-macros/src/cpu.rs",
        original: "                quote!(let #local = #p.peek(#index);)\n",
        mutated: "                quote!(let #local = #p.peek(0u32);)\n",
        tests: &["kernel_macro"],
    },
    Mutation {
        name: "kernel macro, cpu emitter: integer `+` saturates instead of wrapping",
        target: Target::Cpu,
        file: "crates/kernel-macros/src/cpu.rs",
        original: "        Add if t.is_int() => quote!((#a).wrapping_add(#b)),\n",
        mutated: "        Add if t.is_int() => quote!((#a).saturating_add(#b)),\n",
        tests: &["kernel_macro", "kernel_prop"],
    },
    Mutation {
        name: "kernel macro, cpu emitter: `>>` takes its amount modulo 16, not the width",
        target: Target::Cpu,
        file: "crates/kernel-macros/src/cpu.rs",
        original: "        Shr => quote!((#a).wrapping_shr((#b) as u32)),\n",
        mutated: "        Shr => quote!((#a).wrapping_shr(((#b) as u32) & 15)),\n",
        tests: &["kernel_macro", "kernel_prop"],
    },
    // The phase splitter given a bare `barrier();` as an ordinary
    // statement: the phase runs on through it, so an invocation reads
    // shared memory the later invocations have not written yet.
    Mutation {
        name: "kernel macro, cpu phases: a barrier that does not split its phase",
        target: Target::Cpu,
        file: "crates/kernel-macros/src/cpu.rs",
        original: "        if !s.has_barrier() {\n            run.push(s);\n",
        mutated: "        if !s.has_barrier() || matches!(s, Stmt::Barrier(_)) {\n            run.push(s);\n",
        tests: &["kernel_macro", "kernel_prop"],
    },
    // The grid-stride analysis (stride.rs) taking a loop that a `break`
    // leaves: the fast path's chunks then stop at the wrong elements
    // (`grid_stride_break_and_strided_writes_match_the_host`).
    Mutation {
        name: "kernel macro, cpu grid-stride analysis: a `break` of the loop itself taken",
        target: Target::Cpu,
        file: "crates/kernel-macros/src/stride.rs",
        original: "            Stmt::Break(_) | Stmt::Continue(_) => depth > 0,\n",
        mutated: "            Stmt::Break(_) | Stmt::Continue(_) => true,\n",
        tests: &["kernel_macro"],
    },
    // A phase's grid-stride loop run row by row (cpu.rs, `rows`) whose
    // rows leave out their last invocation (`rows_sum_matches_the_host`).
    Mutation {
        name: "kernel macro, cpu rows: a full row skips its last invocation",
        target: Target::Cpu,
        file: "crates/kernel-macros/src/cpu.rs",
        original: "                    let __cnt = ::core::cmp::min(__n as u32, __end - __lo) as usize;\n",
        mutated: "                    let __cnt = ::core::cmp::min(__n as u32 - 1, __end - __lo) as usize;\n",
        tests: &["kernel_macro"],
    },
    // The native CPU row kernels (ops/rows_cpu.rs) finding the last chunk
    // that holds the extreme, not the first
    // (`argmax_takes_the_first_extreme_or_the_first_nan`,
    // `row_ops_in_f64_and_f16_match_the_host`).
    Mutation {
        name: "cpu row kernels: argmax takes the last chunk holding the extreme",
        target: Target::Cpu,
        file: "crates/unigpu/src/ops/rows_cpu.rs",
        original: "        .position(|c| c.iter().fold(false, |a, &v| a | hit(v.to_acc())));\n",
        mutated: "        .rposition(|c| c.iter().fold(false, |a, &v| a | hit(v.to_acc())));\n",
        tests: &["axes"],
    },
    // A phase that is one `if` on the local x id running only the
    // invocations it lets through (cpu.rs, `invocations`), one short
    // (`phases_bounded_by_the_local_id_run_the_invocations_they_should`).
    Mutation {
        name: "kernel macro, cpu phases: a phase bounded by the local id runs one invocation short",
        target: Target::Cpu,
        file: "crates/kernel-macros/src/cpu.rs",
        original: "                let __span = (__row + __lo)..(__row + __hi);\n",
        mutated: "                let __span = (__row + __lo)..(__row + __hi.saturating_sub(1));\n",
        tests: &["kernel_macro"],
    },
    // Rows taken four at a time (cpu.rs, `rows`) reading a later row's
    // elements from the wrong place: one workgroup's width on instead of
    // a grid's.
    Mutation {
        name: "kernel macro, cpu rows: a pass of four rows reads its later rows from the wrong place",
        target: Target::Cpu,
        file: "crates/kernel-macros/src/cpu.rs",
        original: "            quote!(let #s = &#q.slice()[(__lo as u64 + #r * __stride as u64) as usize..][..__n];)\n",
        mutated: "            quote!(let #s = &#q.slice()[(__lo as u64 + #r * __n as u64) as usize..][..__n];)\n",
        tests: &["kernel_macro"],
    },
    // Workgroups run side by side whatever they decide (cpu.rs,
    // `together`): one workgroup's rounds are run for all of a task's
    // (`group_rounds_match_the_host`).
    Mutation {
        name: "kernel macro, cpu: workgroups that decide differently run together",
        target: Target::Cpu,
        file: "crates/kernel-macros/src/cpu.rs",
        original: "    conds.iter().all(|e| crate::stride::is_uniform(e, &names))\n",
        mutated: "    conds.iter().all(|e| crate::stride::is_uniform(e, &names)) || !conds.is_empty()\n",
        tests: &["kernel_macro"],
    },
    // Workgroups run together sharing one shared array (generated.rs,
    // `Shared`): each reads the others' partial sums
    // (`a_shared_memory_tree_sum_matches_the_host`).
    Mutation {
        name: "kernel runtime: workgroups run together share one shared array",
        target: Target::Cpu,
        file: "crates/unigpu/src/kernel/generated.rs",
        original: "                .get(part as usize * self.len as usize + i as usize)\n",
        mutated: "                .get(part as usize * 0 + i as usize)\n",
        tests: &["kernel_macro"],
    },
    // (A per-workgroup scalar's update run by every invocation instead of
    // once is not listed: under it a kernel_macro test ran without end and
    // grew until the 2-core machine ran out of memory, 2026-11-27.)
    // ---- the CUDA backend (GPU machine)
    Mutation {
        name: "a reduction that drops its last block",
        target: Target::Cuda,
        file: "crates/unigpu/src/backend/cuda/ops.rs",
        original: "            param(blocks as u64),\n",
        mutated: "            param((blocks - usize::from(blocks > 1)) as u64),\n",
        tests: &["ops"],
    },
    Mutation {
        name: "a wait that does nothing",
        target: Target::Cuda,
        file: "crates/unigpu/src/backend/cuda/stream.rs",
        original: "        Ok(stream.handle.wait(event)?)\n",
        mutated: "        let _ = (stream, event);\n        Ok(())\n",
        tests: &["streams", "kernels", "ops"],
    },
    Mutation {
        name: "elapsed_ms in microseconds",
        target: Target::Cuda,
        file: "crates/unigpu/src/backend/cuda/event.rs",
        original: "        Ok(start.elapsed_ms(end)?)\n",
        mutated: "        Ok(start.elapsed_ms(end)? * 1e3)\n",
        tests: &["streams"],
    },
    Mutation {
        name: "a sum accumulated in the element type (each thread's running bf16 sum kept in bf16)",
        target: Target::Cuda,
        file: "crates/unigpu/src/backend/cuda/ops_src.rs",
        original: "  A acc = 0; UG_LOOP acc += LD(x[i]); \\\n",
        mutated: "  A acc = 0; UG_LOOP acc = LD(ST(acc + LD(x[i]))); \\\n",
        tests: &["ops"],
    },
    Mutation {
        name: "a matmul with one wrong tile (its last 8 rows never written)",
        target: Target::Cuda,
        file: "crates/cuda-safe/src/blas.rs",
        original: "            n: dim(m)?,\n",
        mutated: "            n: dim(m - m.min(8))?,\n",
        tests: &["ops"],
    },
    Mutation {
        name: "a copy that skips its last element",
        target: Target::Cuda,
        file: "crates/cuda-safe/src/buffer.rs",
        original: "        unsafe { result::memcpy_dtod_async(to, src, self.num_bytes(), stream.cu_stream()) }\n",
        mutated: "        unsafe {\n            let bytes = self.num_bytes() - std::mem::size_of::<T>();\n            result::memcpy_dtod_async(to, src, bytes, stream.cu_stream())\n        }\n",
        tests: &["arrays", "streams", "safe:gpu"],
    },
    Mutation {
        name: "a use on another stream that does not wait for the earlier one",
        target: Target::Cuda,
        file: "crates/cuda-safe/src/uses.rs",
        original: "            None => wait_for(waiter, &self.stream, events),\n",
        mutated: "            None => {\n                let _ = (waiter, events);\n                Ok(())\n            }\n",
        tests: &["streams", "kernels", "safe:gpu"],
    },
    Mutation {
        name: "repeated reads on one stream that keep the first read's end event",
        target: Target::Cuda,
        file: "crates/cuda-safe/src/uses.rs",
        original: "            Some(i) => state.readers[i].end = None,\n",
        mutated: "            Some(_) => {}\n",
        tests: &["streams"],
    },
    Mutation {
        name: "a graph that does not keep the memory of the buffers it uses",
        target: Target::Cuda,
        file: "crates/cuda-safe/src/buffer.rs",
        original: "                _lease: Some(self.lease.get_or_init(Arc::default).clone()),\n",
        mutated: "                _lease: Some(Arc::default()),\n",
        tests: &["graphs"],
    },
    // A pinned buffer as a kernel argument (the cuda fault word is one).
    Mutation {
        name: "a pinned buffer a kernel writes whose host reads do not wait for the kernel",
        target: Target::Cuda,
        file: "crates/cuda-safe/src/pinned.rs",
        original: "        if capturing {\n            return Ok((ptr, UseEnd::none()));\n        }\n        let end = self\n            .uses\n            .write_on(",
        mutated: "        if !capturing {\n            return Ok((ptr, UseEnd::none()));\n        }\n        let end = self\n            .uses\n            .write_on(",
        tests: &["safe:gpu"],
    },
    Mutation {
        name: "a pinned word read but not cleared (a fault reported at every sync)",
        target: Target::Cuda,
        file: "crates/cuda-safe/src/pinned.rs",
        original: "        Some(word.swap(value, Ordering::AcqRel))\n",
        mutated: "        Some(word.load(Ordering::Acquire) | (value & 0))\n",
        tests: &["safe:gpu"],
    },
    Mutation {
        name: "an allocator that hands a busy block to another stream",
        target: Target::Cuda,
        file: "crates/cuda-safe/src/alloc/mod.rs",
        original: "        if self.streams.iter().all(ours) && self.events.iter().all(|(s, _)| ours(s)) {\n",
        mutated: "        if true {\n",
        tests: &["safe:gpu"],
    },
    Mutation {
        name: "a host view of a managed buffer that does not wait for its pending writes",
        target: Target::Cuda,
        file: "crates/cuda-safe/src/buffer/managed.rs",
        original: "        self.uses.synchronize_writes().call(\"cuStreamSynchronize\")?;\n",
        mutated: "",
        tests: &["unified"],
    },
    Mutation {
        name: "a DLPack export with DlpackSync::Host that does not wait for pending work",
        target: Target::Cuda,
        file: "crates/unigpu/src/backend/cuda/buffer.rs",
        original: "            DlpackSync::Host => ready.synchronize()?,\n",
        mutated: "            DlpackSync::Host => drop(ready),\n",
        tests: &["dlpack"],
    },
    Mutation {
        name: "a buffer's own DLPack export imported again with a use record of its own",
        target: Target::Cuda,
        file: "crates/cuda-safe/src/buffer.rs",
        original: "            .map_or_else(Uses::default, |kept| kept.uses.share());\n",
        mutated: "            .map_or_else(Uses::default, |_| Uses::default());\n",
        tests: &["dlpack"],
    },
    Mutation {
        name: "a pinned source writable while its upload is pending",
        target: Target::Cuda,
        file: "crates/cuda-safe/src/pinned.rs",
        original: "    pub fn as_mut_slice(&mut self) -> Result<&mut [T]> {\n        self.uses.synchronize().call(\"cuStreamSynchronize\")?;\n",
        mutated: "    pub fn as_mut_slice(&mut self) -> Result<&mut [T]> {\n",
        tests: &["pinned"],
    },
    // The kernel macro's CUDA form (crates/kernel-macros/src/cuda.rs),
    // against the kernel tests' `::cuda` variants.
    Mutation {
        name: "kernel macro, cuda emitter: float `min` printed as fmax",
        target: Target::Cuda,
        file: "crates/kernel-macros/src/cuda.rs",
        original: "            Math::Min => format!(\"fmin{s}({}, {})\", a[0], a[1]),\n",
        mutated: "            Math::Min => format!(\"fmax{s}({}, {})\", a[0], a[1]),\n",
        tests: &["kernel_macro", "kernel_prop"],
    },
    // Unmasked, a PTX shift by 32 or more gives 0 (or the sign), where
    // the language takes the amount modulo the width.
    Mutation {
        name: "kernel macro, cuda emitter: shift amounts not taken modulo the width",
        target: Target::Cuda,
        file: "crates/kernel-macros/src/cuda.rs",
        original: "                let amount = format!(\"((unsigned int)({b}) & {mask}u)\");\n",
        mutated: "                let amount = format!(\"((unsigned int)({b}))\");\n                let _ = mask;\n",
        tests: &["kernel_macro", "kernel_prop"],
    },
    // The in-bounds proof (crates/kernel-macros/src/inbounds.rs) made too
    // generous: a `for` variable's range one short, so `0..17` looks like
    // `0..16` and an access one past a shared array loses its check.
    Mutation {
        name: "kernel macro, cuda emitter (in-bounds proof): a `for` range one short",
        target: Target::Cuda,
        file: "crates/kernel-macros/src/inbounds.rs",
        original: "                                hi: e.hi - 1,\n",
        mutated: "                                hi: e.hi.saturating_sub(2),\n",
        tests: &["kernel_inbounds"],
    },
    // ---- the torch backend (GPU machine); the spec's C++ is regenerated
    Mutation {
        name: "a reduction that drops its last block",
        target: Target::Torch,
        file: "specs/torch.yaml",
        original: "      return self.sum(::unigpu_torch::acc_type(self)).item<double>();\n",
        mutated: "      auto kept = self.numel() - std::min<int64_t>(self.numel() / 2, 1024);\n      return self.narrow(0, 0, kept).sum(::unigpu_torch::acc_type(self)).item<double>();\n",
        tests: &["ops"],
    },
    Mutation {
        name: "a wait that does nothing",
        target: Target::Torch,
        file: "crates/unigpu/src/backend/torch/stream.rs",
        original: "        Ok(stream.inner.wait_event(&event.read())?)\n",
        mutated: "        let _ = (stream, event);\n        Ok(())\n",
        tests: &["streams", "kernels", "ops"],
    },
    Mutation {
        name: "elapsed_ms in microseconds",
        target: Target::Torch,
        file: "crates/unigpu/src/backend/torch/stream.rs",
        original: "        Ok(a.elapsed_ms(&b)? as f32)\n",
        mutated: "        Ok(a.elapsed_ms(&b)? as f32 * 1e3)\n",
        tests: &["streams"],
    },
    Mutation {
        name: "a sum accumulated in the element type (512 running sums kept in bf16)",
        target: Target::Torch,
        file: "specs/torch.yaml",
        original: "      return self.sum(::unigpu_torch::acc_type(self)).item<double>();\n",
        mutated: "      auto n = self.numel();\n      auto rows = at::constant_pad_nd(self, {0, (512 - n % 512) % 512}).view({512, -1});\n      auto acc = at::zeros_like(rows[0]);\n      for (int64_t r = 0; r < 512; ++r) acc.add_(rows[r]);\n      return acc.sum(::unigpu_torch::acc_type(self)).item<double>();\n",
        tests: &["ops"],
    },
    Mutation {
        name: "a matmul with one wrong tile",
        target: Target::Torch,
        file: "specs/torch.yaml",
        original: "                    view(b, k, n, b_offset, b_batch_stride, b_ld, b_transposed));\n      }\n",
        mutated: "                    view(b, k, n, b_offset, b_batch_stride, b_ld, b_transposed));\n      }\n      auto r = std::min<int64_t>({8, m, n});\n      c.narrow(1, m - r, r).narrow(2, n - r, r).mul_(2);\n",
        tests: &["ops"],
    },
    Mutation {
        name: "a copy that skips its last element",
        target: Target::Torch,
        file: "specs/torch.yaml",
        original: "      self.copy_(src, non_blocking);\n",
        mutated: "      auto kept = std::max<int64_t>(self.numel() - 1, 0);\n      self.narrow(0, 0, kept).copy_(src.narrow(0, 0, kept), non_blocking);\n",
        tests: &["arrays", "streams"],
    },
    Mutation {
        name: "a DLPack export with DlpackSync::Host that does not wait for pending work",
        target: Target::Torch,
        file: "crates/unigpu/src/backend/torch/buffer.rs",
        original: "            DlpackSync::Host => stream.inner.synchronize()?,\n",
        mutated: "            DlpackSync::Host => {}\n",
        tests: &["dlpack"],
    },
    Mutation {
        name: "a buffer's own DLPack export imported again with a use record of its own",
        target: Target::Torch,
        file: "crates/unigpu/src/backend/torch/buffer.rs",
        original: "            uses: shared.uses.clone(),\n",
        mutated: "            uses: Arc::default(),\n",
        tests: &["dlpack"],
    },
];

/// The facade's test binaries the CPU mutations are checked against.
// ---- the vulkan backend (`--vulkan`, on a Vulkan adapter: lavapipe in CI)
const VULKAN_MUTATIONS: &[Mutation] = &[
    Mutation {
        name: "a reduction that drops its last partial",
        target: Target::Vulkan,
        file: "crates/unigpu/src/backend/vulkan/ops.rs",
        original: "                .u32(0, total as u32)\n",
        mutated: "                .u32(0, (total - usize::from(total > 1)) as u32)\n",
        tests: &[],
    },
    Mutation {
        name: "a wait that does nothing",
        target: Target::Vulkan,
        file: "crates/unigpu/src/backend/vulkan/stream.rs",
        original: "            Some(fence) => stream.wait_for(fence),\n",
        mutated: "            Some(fence) => {\n                drop(fence);\n                Ok(())\n            }\n",
        tests: &[],
    },
    Mutation {
        name: "a read on another stream that does not wait for the last write",
        target: Target::Vulkan,
        file: "crates/unigpu/src/backend/vulkan/tracker.rs",
        original: "        lock(&self.0).last_write.clone()\n",
        mutated: "        drop(lock(&self.0));\n        None\n",
        tests: &[],
    },
    Mutation {
        name: "a write that does not wait for the pending reads of what it writes",
        target: Target::Vulkan,
        file: "crates/unigpu/src/backend/vulkan/stream.rs",
        original: "        deps.extend(writes.iter().flat_map(|t| t.for_write()));\n",
        mutated: "        deps.extend(writes.iter().filter_map(|t| t.for_read()));\n",
        tests: &[],
    },
    Mutation {
        name: "elapsed_ms in microseconds",
        target: Target::Vulkan,
        file: "crates/unigpu/src/backend/vulkan/event.rs",
        original: "        Ok((ticks * ns_per_tick / 1e6) as f32)\n",
        mutated: "        Ok((ticks * ns_per_tick / 1e3) as f32)\n",
        tests: &[],
    },
    // The f16/bf16 matmul rounding each entry's running sum to the element
    // type after every step of k, as a matmul that accumulates in it would.
    Mutation {
        name: "an f16/bf16 matmul that accumulates in the element type",
        target: Target::Vulkan,
        file: "crates/unigpu/src/backend/vulkan/shaders/matmul.rs",
        original: "                \"            c{i}{j} = fma(a{i}, b{j}, c{i}{j});\\n\"\n",
        mutated: "                \"            c{i}{j} = {rt}fma(a{i}, b{j}, c{i}{j}){end};\\n\",\n                rt = if num.packed() { \"cv_in(cv_out(\" } else { \"\" },\n                end = if num.packed() { \"))\" } else { \"\" },\n",
        tests: &[],
    },
    // Not "a bf16 sum kept in bf16" as for the other backends: lavapipe
    // binds 128 MiB at once, so the 2^27-element sum of
    // a_long_bf16_sum_accumulates_in_f32 runs as two slices and each
    // invocation adds 256 terms, where a running sum rounded to bf16 errs
    // as often up as down and stays inside the bound. (An adapter that binds
    // the whole array gives each invocation 512, as CUDA's threads have,
    // and there the test catches it.)
    Mutation {
        name: "an f32 -> f16 conversion that truncates instead of rounding",
        target: Target::Vulkan,
        // One copy of the conversion serves the vulkan shaders and the
        // kernel macro (crates/shader-text, since 163513d).
        file: "crates/shader-text/src/lib.rs",
        original: "    if (rest > 0x1000u || (rest == 0x1000u && (r & 1u) == 1u)) { r = r + 1u; }\n",
        mutated: "",
        tests: &[],
    },
    Mutation {
        name: "a matmul whose last row is never written",
        target: Target::Vulkan,
        file: "crates/unigpu/src/backend/vulkan/shaders/matmul.rs",
        original: "if (r < p.m && col < p.n) {{",
        mutated: "if (r + 1u < p.m && col < p.n) {{",
        tests: &[],
    },
    Mutation {
        name: "a copy that skips its last word",
        target: Target::Vulkan,
        file: "crates/unigpu/src/backend/vulkan/buffer.rs",
        original: "        let size = from.size().min(to.size());\n",
        mutated: "        let size = from.size().min(to.size()) - 4;\n",
        tests: &[],
    },
    // Transfers past one staging slot (transfer.rs), caught by
    // tests/vulkan.rs's transfers_of_several_staging_slots_keep_every_byte.
    Mutation {
        name: "an upload whose staging slots all land at the array's start",
        target: Target::Vulkan,
        file: "crates/unigpu/src/backend/vulkan/transfer.rs",
        original: "        let (target, pool, at) = (dst.clone(), device.staging.clone(), offset as u64);\n",
        mutated: "        let (target, pool, at) = (dst.clone(), device.staging.clone(), 0u64);\n",
        tests: &[],
    },
    Mutation {
        name: "a download that reads every staging slot from the array's start",
        target: Target::Vulkan,
        file: "crates/unigpu/src/backend/vulkan/transfer.rs",
        original: "        let (at, size) = (offset as u64, padded(n));\n",
        mutated: "        let (at, size) = (0u64, padded(n));\n",
        tests: &[],
    },
    // The kernel macro's WGSL form (crates/kernel-macros/src/wgsl.rs),
    // against kernel_macro.rs's `::vulkan` variants only (`tests`), which
    // is minutes on lavapipe rather than the quarter hour of them all.
    Mutation {
        name: "kernel macro, wgsl emitter: exp2 printed as exp",
        target: Target::Vulkan,
        file: "crates/kernel-macros/src/wgsl.rs",
        original: "            Math::Exp2 => format!(\"exp2({})\", a[0]),\n",
        mutated: "            Math::Exp2 => format!(\"exp({})\", a[0]),\n",
        tests: &["kernel_macro"],
    },
    Mutation {
        name: "kernel macro, wgsl emitter: unsigned x / 0 gives 0, not x",
        target: Target::Vulkan,
        file: "crates/kernel-macros/src/wgsl.rs",
        original: "(Div, false) => format!(\"if (b == {zero}) {{ return a; }} return a / b;\"),",
        mutated: "(Div, false) => format!(\"if (b == {zero}) {{ return {zero}; }} return a / b;\"),",
        tests: &["kernel_macro"],
    },
    // The in-bounds proof (inbounds.rs) made too generous, against the
    // near misses of kernel_inbounds.rs (naga clamps an unchecked index,
    // so a lost check shows as a fault never reported).
    Mutation {
        name: "kernel macro, wgsl emitter (in-bounds proof): a `for` range one short",
        target: Target::Vulkan,
        file: "crates/kernel-macros/src/inbounds.rs",
        original: "                                hi: e.hi - 1,\n",
        mutated: "                                hi: e.hi.saturating_sub(2),\n",
        tests: &["kernel_inbounds"],
    },
    Mutation {
        name: "kernel macro, wgsl emitter (in-bounds proof): a fact kept after its variable changes",
        target: Target::Vulkan,
        file: "crates/kernel-macros/src/inbounds.rs",
        original: "            facts.retain(|f| !f.vars.iter().any(|v| assigns(s, v)));\n",
        mutated: "            facts.retain(|f| !f.vars.is_empty());\n",
        tests: &["kernel_inbounds"],
    },
    Mutation {
        name: "kernel macro, wgsl emitter (in-bounds proof): a window one wider",
        target: Target::Vulkan,
        file: "crates/kernel-macros/src/inbounds.rs",
        original: "                    .any(|f| f.array == array && f.key == k && f.slack >= c)\n",
        mutated: "                    .any(|f| f.array == array && f.key == k && f.slack + 1 >= c)\n",
        tests: &["kernel_inbounds"],
    },
    // The widened loop (widen.rs) handing over to the loop after it too
    // early: elements of the last vectors run twice.
    Mutation {
        name: "kernel macro, wgsl emitter (widened loop): the loop after it restarts a vector early",
        target: Target::Vulkan,
        file: "crates/kernel-macros/src/wgsl.rs",
        original: "        self.line(2, &format!(\"{var} = ug_vn * {lanes}u + {var};\"));\n",
        mutated: "        self.line(2, &format!(\"{var} = ug_vn * {lanes}u - {lanes}u + {var};\"));\n",
        tests: &["kernel_macro", "kernel_generic"],
    },
    // The hoisted loop (wgsl.rs, `hoisted`) loading the later iterations'
    // elements one apart instead of a stride apart.
    Mutation {
        name: "kernel macro, wgsl emitter (hoisted loop): later loads one element apart",
        target: Target::Vulkan,
        file: "crates/kernel-macros/src/wgsl.rs",
        original: "                    format!(\"{var} + {k}u * ({stride})\")\n",
        mutated: "                    format!(\"{var} + {k}u\")\n",
        tests: &["kernel_macro"],
    },
];

pub fn run(args: &[String]) -> anyhow::Result<()> {
    // `--only TEXT` keeps the mutations whose name contains TEXT (or one
    // of TEXT's `|`-separated parts): for checking new ones without the
    // whole run.
    let (args, only) = match args {
        [rest @ .., flag, text] if flag == "--only" => (rest, Some(text.as_str())),
        _ => (args, None),
    };
    match args.first().map(String::as_str) {
        None => run_cpu(only),
        Some("--gpu-pack") if args.len() == 1 => gpu::pack(only),
        Some("--vulkan") if args.len() == 1 => run_vulkan(only),
        Some(a) => bail!(
            "`cargo xtask mutants` takes no arguments, `--vulkan` or `--gpu-pack`, and \
             `--only TEXT` last (got `{a}`)"
        ),
    }
}

/// Whether `m` is kept by `--only` (`a|b` keeps the names with either).
fn chosen(m: &Mutation, only: Option<&str>) -> bool {
    only.is_none_or(|text| text.split('|').any(|t| m.name.contains(t)))
}

fn run_cpu(only: Option<&str>) -> anyhow::Result<()> {
    let root = crate::generator::repo_root();
    let mut survivors = Vec::new();
    let cpu: Vec<&Mutation> = MUTATIONS
        .iter()
        .filter(|m| m.target == Target::Cpu && chosen(m, only))
        .collect();
    if cpu.is_empty() {
        bail!("no CPU mutation's name contains `{}`", only.unwrap_or(""));
    }
    for m in &cpu {
        println!("mutation: {}", m.name);
        let failed = with_mutation(&root, m, || failing_tests(&root, m.tests))?;
        if failed.is_empty() {
            println!("  SURVIVED: no test failed");
            survivors.push(m.name);
        } else {
            println!(
                "  caught by {} test(s): {}",
                failed.len(),
                failed.join(", ")
            );
        }
    }
    if !survivors.is_empty() {
        bail!("the tests did not catch: {}", survivors.join("; "));
    }
    println!("mutants: {} caught, 0 survived", cpu.len());
    Ok(())
}

/// Runs `f` with `m` written into its file, restoring the file afterwards.
/// A mutated spec is regenerated into its FFI tiers, and regenerated again
/// once restored.
/// The vulkan mutations, each against the `::vulkan` variants and
/// tests/vulkan.rs (ignored in plain runs: they need an adapter). The
/// unmutated baseline must pass first, so a missing adapter fails here
/// rather than passing every mutant off as caught.
fn run_vulkan(only: Option<&str>) -> anyhow::Result<()> {
    let root = crate::generator::repo_root();
    let chosen: Vec<&Mutation> = VULKAN_MUTATIONS
        .iter()
        .filter(|m| chosen(m, only))
        .collect();
    if chosen.is_empty() {
        bail!(
            "no vulkan mutation's name contains `{}`",
            only.unwrap_or("")
        );
    }
    // The baseline runs what the chosen mutations run: every vulkan test,
    // unless each of them names its binaries.
    let mut named: Vec<&str> = Vec::new();
    if chosen.iter().all(|m| !m.tests.is_empty()) {
        for m in &chosen {
            for t in m.tests {
                if !named.contains(t) {
                    named.push(t);
                }
            }
        }
    }
    println!("baseline (no mutation)");
    let failed = failing_vulkan_tests(&root, &named)?;
    if !failed.is_empty() {
        bail!(
            "the unmutated vulkan tests fail ({}); is there a Vulkan adapter?",
            failed.join(", ")
        );
    }
    let mut survivors = Vec::new();
    for m in &chosen {
        println!("mutation: {}", m.name);
        let failed = with_mutation(&root, m, || failing_vulkan_tests(&root, m.tests))?;
        if failed.is_empty() {
            println!("  SURVIVED: no test failed");
            survivors.push(m.name);
        } else {
            println!(
                "  caught by {} test(s): {}",
                failed.len(),
                failed.join(", ")
            );
        }
    }
    if !survivors.is_empty() {
        bail!("the vulkan tests did not catch: {}", survivors.join("; "));
    }
    println!("vulkan mutants: {} caught, 0 survived", chosen.len());
    Ok(())
}

fn with_mutation<R>(
    root: &Path,
    m: &Mutation,
    f: impl FnOnce() -> anyhow::Result<R>,
) -> anyhow::Result<R> {
    let path: PathBuf = root.join(m.file);
    let source = fs::read_to_string(&path).with_context(|| format!("reading {}", m.file))?;
    if source.matches(m.original).count() != 1 {
        bail!(
            "mutation `{}` ({}): its text is not found exactly once in {}; update xtask/src/mutants/mod.rs",
            m.name,
            m.target.name(),
            m.file
        );
    }
    let spec = m.file.starts_with("specs/");
    fs::write(&path, source.replacen(m.original, m.mutated, 1))?;
    let result = if spec {
        regenerate(m.file).and_then(|()| f())
    } else {
        f()
    };
    fs::write(&path, &source).with_context(|| format!("restoring {}", m.file))?;
    if spec {
        regenerate(m.file).context("regenerating the restored spec")?;
    }
    result
}

fn regenerate(spec: &str) -> anyhow::Result<()> {
    crate::generator::run(&[spec.to_string()])
}

/// The names of the tests that fail. A mutation that does not compile is
/// an error, not a catch: it must build to count.
fn failing_tests(root: &Path, tests: &[&str]) -> anyhow::Result<Vec<String>> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.current_dir(root)
        .args(["test", "-q", "-p", "unigpu", "--no-fail-fast"]);
    for t in tests {
        cmd.args(["--test", t]);
    }
    failures_of(cmd)
}

/// The `::vulkan` tests that fail: of the binaries in `tests`, or where it
/// is empty, of every binary, and all of tests/vulkan.rs.
fn failing_vulkan_tests(root: &Path, tests: &[&str]) -> anyhow::Result<Vec<String>> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut failed = Vec::new();
    if !tests.is_empty() {
        let mut cmd = Command::new(&cargo);
        cmd.current_dir(root)
            .args(["test", "-q", "-p", "unigpu", "--no-fail-fast"]);
        for t in tests {
            cmd.args(["--test", t]);
        }
        cmd.args(["--", "--ignored", "::vulkan"]);
        return failures_of(cmd);
    }
    for args in [
        &["--tests", "--", "--ignored", "::vulkan"][..],
        &["--test", "vulkan", "--", "--include-ignored"][..],
    ] {
        let mut cmd = Command::new(&cargo);
        cmd.current_dir(root)
            .args(["test", "-q", "-p", "unigpu", "--no-fail-fast"])
            .args(args);
        failed.extend(failures_of(cmd)?);
    }
    Ok(failed)
}

/// The tests `cmd` (a `cargo test`) reports as failed.
fn failures_of(mut cmd: Command) -> anyhow::Result<Vec<String>> {
    let out = cmd.output().context("running cargo test")?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    if stderr.contains("error[E") || stderr.contains("could not compile") {
        bail!("the mutated source does not compile:\n{stderr}");
    }
    let failed: Vec<String> = stdout
        .lines()
        .filter_map(|l| l.strip_prefix("---- "))
        .filter_map(|l| l.strip_suffix(" stdout ----"))
        .map(str::to_string)
        .collect();
    if out.status.success() && !failed.is_empty() {
        bail!("cargo test succeeded yet listed failures; cannot tell what happened");
    }
    Ok(failed)
}

#[cfg(test)]
mod tests {
    use super::{MUTATIONS, VULKAN_MUTATIONS};

    /// Every mutation still finds the text it replaces, so a refactor that
    /// moves it fails here, in CI, rather than on the GPU machine.
    #[test]
    fn every_mutation_finds_its_text_exactly_once() {
        let root = crate::generator::repo_root();
        for m in MUTATIONS.iter().chain(VULKAN_MUTATIONS) {
            let source = std::fs::read_to_string(root.join(m.file)).unwrap();
            assert_eq!(
                source.matches(m.original).count(),
                1,
                "mutation `{}` ({}) in {}",
                m.name,
                m.target.name(),
                m.file
            );
        }
    }

    /// A CPU or GPU mutation with no test binary named would be checked
    /// against nothing and reported as a survivor, or (GPU) not built.
    #[test]
    fn every_cpu_and_gpu_mutation_names_its_test_binaries() {
        for m in MUTATIONS {
            assert!(
                !m.tests.is_empty(),
                "mutation `{}` ({}) names no test binary",
                m.name,
                m.target.name()
            );
        }
    }
}
