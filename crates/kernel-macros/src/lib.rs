//! `#[unigpu::kernel]`: one Rust function, in the kernel language that
//! docs/kernels.md describes, turned at compile time into CUDA C++ (for
//! NVRTC: the cuda and torch backends), WGSL (the vulkan backend) and a
//! Rust function over host slices (the CPU backend), all attached to one
//! `unigpu::Kernel`.
//!
//! The front end (lower.rs) checks the function and makes the typed IR
//! (ir.rs); each emitter (cuda.rs, wgsl.rs, cpu.rs) prints it. Anything
//! outside the language is a compile error with its span, emitted alone
//! (no other generated code), so the compile-fail tests need only this
//! crate.

mod barrier_scope;
mod cpu;
mod cuda;
mod generics;
mod inbounds;
mod ir;
mod lower;
mod stride;
mod uniform;
mod wgsl;
mod widen;

use proc_macro::TokenStream;
use proc_macro2::TokenStream as Tokens;
use quote::{ToTokens, format_ident, quote};
use syn::spanned::Spanned;

use ir::{Kernel, ParamKind, Ty};

/// Turns a function in the kernel language into a module of the same name
/// holding the kernel: `NAME::kernel(&ctx)?` builds it (a
/// `NAME::Kernel`, which derefs to `unigpu::Kernel`, so `ctx.launch`
/// takes it), `k.launch(&ctx, grid, (args...))` launches it with the
/// argument types checked at compile time, and `NAME::CUDA` /
/// `NAME::WGSL` are the emitted sources. `#[kernel(workgroup_size = 64)]`
/// or `workgroup_size = (16, 16)` / `(x, y, z)` sets the workgroup size
/// (default 256), which launches must use. See docs/kernels.md.
#[proc_macro_attribute]
pub fn kernel(attr: TokenStream, item: TokenStream) -> TokenStream {
    match expand(attr.into(), item.into()) {
        Ok(t) => t.into(),
        Err(e) => e.to_compile_error().into(),
    }
}

fn workgroup(attr: Tokens) -> syn::Result<[u32; 3]> {
    let mut size = [256, 1, 1];
    if attr.is_empty() {
        return Ok(size);
    }
    let parser = syn::meta::parser(|meta| {
        if !meta.path.is_ident("workgroup_size") {
            return Err(meta.error("unknown kernel option: the one option is `workgroup_size = N` or `(x, y)` or `(x, y, z)`"));
        }
        let value: syn::Expr = meta.value()?.parse()?;
        let dims: Vec<&syn::Expr> = match &value {
            syn::Expr::Tuple(t) => t.elems.iter().collect(),
            syn::Expr::Paren(p) => vec![&*p.expr],
            e => vec![e],
        };
        if dims.is_empty() || dims.len() > 3 {
            return Err(syn::Error::new(
                value.span(),
                "a workgroup size has 1 to 3 dimensions",
            ));
        }
        for (i, d) in dims.iter().enumerate() {
            let syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Int(n),
                ..
            }) = d
            else {
                return Err(syn::Error::new(
                    d.span(),
                    "a workgroup size is written in whole numbers",
                ));
            };
            let n: u32 = n.base10_parse()?;
            if n == 0 {
                return Err(syn::Error::new(
                    d.span(),
                    "a workgroup dimension cannot be 0",
                ));
            }
            size[i] = n;
        }
        let total: u64 = size.iter().map(|&d| d as u64).product();
        if total > 1024 {
            return Err(syn::Error::new(
                value.span(),
                format!("a workgroup of {total} invocations: at most 1024 run on every backend"),
            ));
        }
        Ok(())
    });
    syn::parse::Parser::parse2(parser, attr)?;
    Ok(size)
}

/// Marks a function the kernels may call: `#[unigpu::device] fn sq(x: f32)
/// -> f32 { x * x }`. Values in, one value out (its last expression or a
/// `return v;`), the kernel language inside, no arrays, thread indices or
/// barriers, no recursion. It expands to a `macro_rules!` that hands its
/// source to the kernels that call it, so define it before them (in the
/// same module or a `#[macro_use]` one). See docs/kernels.md.
#[proc_macro_attribute]
pub fn device(attr: TokenStream, item: TokenStream) -> TokenStream {
    let attr: Tokens = attr.into();
    if !attr.is_empty() {
        return syn::Error::new(attr.span(), "#[unigpu::device] takes no options")
            .to_compile_error()
            .into();
    }
    let item: Tokens = item.into();
    let f: syn::ItemFn = match syn::parse2(item.clone()) {
        Ok(f) => f,
        Err(e) => return e.to_compile_error().into(),
    };
    // The signature is checked here too, so a mistake in it shows even
    // before a kernel calls it (the body needs the other device
    // functions, which the kernel gathers).
    if let Err(e) = lower::check_sig(&f) {
        return e.to_compile_error().into();
    }
    let mac = helper_macro(&f.sig.ident.to_string(), f.sig.ident.span());
    quote! {
        #[doc(hidden)]
        #[allow(unused_macros)]
        macro_rules! #mac {
            ([$($h:tt)*] $($k:tt)*) => {
                ::unigpu::__kernel_with_helpers! { [$($h)* #item] $($k)* }
            };
        }
    }
    .into()
}

fn helper_macro(name: &str, span: proc_macro2::Span) -> proc_macro2::Ident {
    proc_macro2::Ident::new(&format!("__unigpu_device_{name}"), span)
}

/// The kernel macro again, with the device functions it calls gathered
/// so far: `[fn ...] (attr) item`. Not meant to be called by hand.
#[doc(hidden)]
#[proc_macro]
pub fn __kernel_with_helpers(input: TokenStream) -> TokenStream {
    let input: Tokens = input.into();
    let mut it = input.into_iter();
    let (Some(proc_macro2::TokenTree::Group(h)), Some(proc_macro2::TokenTree::Group(a))) =
        (it.next(), it.next())
    else {
        return quote!(compile_error!("malformed __kernel_with_helpers input");).into();
    };
    let item: Tokens = it.collect();
    let helpers = match syn::parse::Parser::parse2(
        |s: syn::parse::ParseStream| {
            let mut v = Vec::new();
            while !s.is_empty() {
                v.push(s.parse::<syn::ItemFn>()?);
            }
            Ok(v)
        },
        h.stream(),
    ) {
        Ok(v) => v,
        Err(e) => return e.to_compile_error().into(),
    };
    match expand_with(a.stream(), item, helpers) {
        Ok(t) => t.into(),
        Err(e) => e.to_compile_error().into(),
    }
}

/// Names called as plain functions in `t` (not methods, not the
/// language's own functions or keywords).
fn called(t: Tokens, out: &mut Vec<(String, proc_macro2::Span)>) {
    let tokens: Vec<proc_macro2::TokenTree> = t.into_iter().collect();
    for (i, tt) in tokens.iter().enumerate() {
        match tt {
            proc_macro2::TokenTree::Group(g) => called(g.stream(), out),
            proc_macro2::TokenTree::Ident(id) => {
                let next_is_call = matches!(
                    tokens.get(i + 1),
                    Some(proc_macro2::TokenTree::Group(g)) if g.delimiter() == proc_macro2::Delimiter::Parenthesis
                );
                let after_dot = i > 0
                    && matches!(&tokens[i - 1], proc_macro2::TokenTree::Punct(p) if p.as_char() == '.');
                let after_colons = i > 0
                    && matches!(&tokens[i - 1], proc_macro2::TokenTree::Punct(p) if p.as_char() == ':');
                // `fn name(...)`: an item, which the front end refuses.
                let after_fn = i > 0
                    && matches!(&tokens[i - 1], proc_macro2::TokenTree::Ident(f) if f == "fn");
                let name = id.to_string();
                const OWN: &[&str] = &[
                    "if",
                    "while",
                    "return",
                    "in",
                    "match",
                    "else",
                    "let",
                    "mut",
                    "loop",
                    "break",
                    "continue",
                    "for",
                    "move",
                    "unsafe",
                    "as",
                    "fn",
                    "global_id",
                    "local_id",
                    "workgroup_id",
                    "workgroup_size",
                    "num_workgroups",
                    "barrier",
                    "rsqrt",
                    "fma",
                    "mul_hi",
                    "subgroup_add",
                    "subgroup_max",
                    "subgroup_min",
                    "subgroup_size",
                    "subgroup_id",
                    "subgroup_invocation_id",
                    "pow",
                    "log",
                    "shared",
                    "Some",
                    "Ok",
                    "Err",
                ];
                if next_is_call
                    && !after_dot
                    && !after_colons
                    && !after_fn
                    && !OWN.contains(&name.as_str())
                    && !out.iter().any(|(n, _)| *n == name)
                {
                    out.push((name, id.span()));
                }
            }
            _ => {}
        }
    }
}

fn expand(attr: Tokens, item: Tokens) -> syn::Result<Tokens> {
    expand_with(attr, item, Vec::new())
}

fn expand_with(attr: Tokens, item: Tokens, helpers: Vec<syn::ItemFn>) -> syn::Result<Tokens> {
    let f: syn::ItemFn = syn::parse2(item.clone())?;
    // A function called that is not gathered yet: ask its
    // #[unigpu::device] macro to add its source and call back.
    let mut names = Vec::new();
    called(f.block.to_token_stream(), &mut names);
    for h in &helpers {
        called(h.block.to_token_stream(), &mut names);
    }
    if let Some((name, span)) = names
        .into_iter()
        .find(|(n, _)| !helpers.iter().any(|h| h.sig.ident == n))
    {
        let mac = helper_macro(&name, span);
        return Ok(quote! { #mac! { [#(#helpers)*] (#attr) #item } });
    }
    if generics::is_generic(&f) {
        return generics::expand(attr, &f, &helpers);
    }
    let workgroup = workgroup(attr)?;
    let funcs = lower::funcs(&helpers)?;
    let params = lower::params(&f.sig)?;
    let (params, shared, body, sites) = lower::body(params, &[], &f.block, &helpers, workgroup)?;
    check_sites(&f, &sites)?;
    let k = Kernel {
        name: f.sig.ident.to_string(),
        params,
        shared,
        funcs,
        workgroup,
        body,
        sites,
    };
    let cuda_src = cuda::emit(&k);
    let wgsl_src = wgsl::emit(&k, false);
    // For an adapter whose `fma` rounds twice (generated::build picks it).
    let wgsl_fma = if k.uses_fma(Ty::F32) {
        wgsl::emit(&k, true)
    } else {
        String::new()
    };
    let cpu_body = cpu::body(&k, &quote!());
    Ok(module(&f, &k, &cuda_src, &wgsl_src, &wgsl_fma, cpu_body))
}

/// Out-of-bounds reports number a kernel's access sites in 20 bits.
fn check_sites(f: &syn::ItemFn, sites: &[ir::Site]) -> syn::Result<()> {
    if sites.len() >= 1 << 20 {
        return Err(syn::Error::new(
            f.sig.ident.span(),
            "a kernel indexes arrays in at most 2^20 places (out-of-bounds reports number them in 20 bits)",
        ));
    }
    Ok(())
}

/// The `Param` of each of the kernel's parameters, as `Spec::params` lists them.
fn param_specs(k: &Kernel) -> Vec<Tokens> {
    k.params
        .iter()
        .map(|p| match p.kind {
            ParamKind::Array { elem, writable } => {
                let d = dtype(elem);
                quote!(::unigpu::kernel::generated::Param::Array { dtype: #d, writable: #writable })
            }
            ParamKind::Scalar(t) => {
                let d = dtype(t);
                quote!(::unigpu::kernel::generated::Param::Scalar(#d))
            }
        })
        .collect()
}

/// The CPU form's prologue: the fault word and the kernel's code, then
/// each declared argument as its `p_NAME`.
fn cpu_unpack(k: &Kernel) -> Tokens {
    let unpack = k.params.iter().enumerate().map(|(i, p)| {
        let var = format_ident!("p_{}", p.name);
        let guard = format_ident!("__guard_{}", i);
        match p.kind {
            ParamKind::Array {
                elem,
                writable: false,
            } => {
                let t = rust_ty(elem);
                quote! {
                    let #guard = __args.input::<#t>(#i)?;
                    let #var = ::unigpu::kernel::generated::Ro::<#t>::new(&#guard[..])?;
                }
            }
            ParamKind::Array {
                elem,
                writable: true,
            } => {
                let t = rust_ty(elem);
                quote! {
                    let mut #guard = __args.output::<#t>(#i)?;
                    let #var = ::unigpu::kernel::generated::Rw::<#t>::new(&mut #guard[..])?;
                }
            }
            ParamKind::Scalar(Ty::Bool) => quote!(let #var = __args.scalar::<u32>(#i)? != 0;),
            ParamKind::Scalar(Ty::Usize) => quote!(let #var = __args.scalar::<u32>(#i)?;),
            ParamKind::Scalar(t) => {
                let t = rust_ty(t);
                quote!(let #var = __args.scalar::<#t>(#i)?;)
            }
        }
    });
    // The fault word and the kernel's code follow the declared arguments
    // (`generated::Fault`): out-of-bounds accesses record their site there.
    let (status, code) = (k.params.len(), k.params.len() + 1);
    let fault = quote! {
        let mut __status_guard = __args.output::<u32>(#status)?;
        let __status = ::unigpu::kernel::generated::Rw::<u32>::new(&mut __status_guard[..])?;
        let __fault = ::unigpu::kernel::generated::Fault::new(&__status, __args.scalar::<u32>(#code)?)?;
    };
    quote! {
        #fault
        #(#unpack)*
    }
}

/// The kernel's access sites, as `Spec::sites` lists them (index = site).
fn site_table(k: &Kernel) -> Vec<Tokens> {
    k.sites
        .iter()
        .map(|s| {
            let array = &s.array;
            let access = format_ident!("{}", s.access.name());
            // `line!()` and `file!()` with the access's span name where the
            // source indexes the array (stable Rust, no span-locations).
            let line = quote::quote_spanned!(s.span=> line!());
            let file = quote::quote_spanned!(s.span=> file!());
            quote! {
                ::unigpu::kernel::generated::Site {
                    array: #array,
                    file: #file,
                    line: #line,
                    access: ::unigpu::kernel::generated::Access::#access,
                }
            }
        })
        .collect()
}

/// The DType the host passes: bool and usize values travel as u32.
fn dtype(t: Ty) -> Tokens {
    let d = match t {
        Ty::Bool | Ty::Usize => format_ident!("U32"),
        t => format_ident!("{}", t.name().to_uppercase()),
    };
    quote!(::unigpu::DType::#d)
}

/// The Rust type of an element or value, as the user's crate names it.
fn rust_ty(t: Ty) -> Tokens {
    match t {
        Ty::F16 => quote!(::unigpu::f16),
        Ty::Bf16 => quote!(::unigpu::bf16),
        t => {
            let i = format_ident!("{}", t.name());
            quote!(#i)
        }
    }
}

fn module(
    f: &syn::ItemFn,
    k: &Kernel,
    cuda_src: &str,
    wgsl_src: &str,
    wgsl_fma: &str,
    cpu_body: Tokens,
) -> Tokens {
    let vis = &f.vis;
    let attrs: Vec<_> = f
        .attrs
        .iter()
        .filter(|a| a.path().is_ident("doc"))
        .collect();
    let ident = &f.sig.ident;
    let name = &k.name;
    let [x, y, z] = k.workgroup;
    let specs = param_specs(k);
    let grid_stride = stride::analyse(k).is_some();
    let rows = cpu::has_rows(k);
    let together = cpu::runs_together(k);
    let arg_types = k.params.iter().map(|p| match p.kind {
        ParamKind::Array {
            elem,
            writable: false,
        } => {
            let t = rust_ty(elem);
            quote!(&'a ::unigpu::GpuArray<#t>)
        }
        ParamKind::Array {
            elem,
            writable: true,
        } => {
            let t = rust_ty(elem);
            quote!(&'a mut ::unigpu::GpuArray<#t>)
        }
        ParamKind::Scalar(t) => rust_ty(t),
    });
    let arg_types: Vec<Tokens> = arg_types.collect();
    // What the launch passes on: bool and usize values as u32.
    let host_types = k.params.iter().zip(&arg_types).map(|(p, t)| match p.kind {
        ParamKind::Scalar(Ty::Bool | Ty::Usize) => quote!(u32),
        _ => t.clone(),
    });
    let host_types = quote!((#(#host_types,)*));
    let arg_names: Vec<_> = (0..k.params.len())
        .map(|i| format_ident!("__a{}", i))
        .collect();
    let host_values = k.params.iter().enumerate().map(|(i, p)| {
        let a = &arg_names[i];
        match p.kind {
            ParamKind::Scalar(Ty::Bool) => quote!(u32::from(#a)),
            ParamKind::Scalar(Ty::Usize) => {
                quote!(::unigpu::kernel::generated::usize_arg(NAME, #i, #a)?)
            }
            _ => quote!(#a),
        }
    });
    let arg_types = quote!((#(#arg_types,)*));
    let unpack = cpu_unpack(k);
    let sites = site_table(k);
    let doc = format!("The kernel `{name}` (#[unigpu::kernel]): build it with [`kernel`].");
    let fma = [k.uses_fma(Ty::F32), k.uses_fma(Ty::F64)];
    let f64_math = k.f64_only_f32_math();
    let subgroups = k.uses_subgroups();
    let wide = [
        k.uses(|t| t == Ty::F64),
        k.uses(|t| matches!(t, Ty::I64 | Ty::U64)),
    ];
    quote! {
        #(#attrs)*
        #[doc = #doc]
        #[allow(non_snake_case, non_camel_case_types, dead_code)]
        #vis mod #ident {
            /// The kernel's name.
            pub const NAME: &str = #name;
            /// The CUDA C++ the cuda and torch backends compile (NVRTC, `--fmad=false`).
            pub const CUDA: &str = #cuda_src;
            /// The WGSL the vulkan backend runs (on an adapter whose f32
            /// `fma` is fused, if the kernel calls it).
            pub const WGSL: &str = #wgsl_src;
            /// The WGSL with f32 `fma` emulated (rounding once through
            /// f64), for an adapter whose `fma` rounds twice; empty for a
            /// kernel without f32 `fma`.
            pub const WGSL_FMA_EMULATED: &str = #wgsl_fma;
            /// Whether the CPU form has the grid-stride fast path: the
            /// kernel is an independent grid-stride loop (docs/kernels.md,
            /// "Speed"), run in a 1-D launch as chunks of its index range
            /// with plain slices for the arrays it writes.
            pub const CPU_GRID_STRIDE: bool = #grid_stride;
            /// Whether the CPU form's phases run a grid-stride loop row by
            /// row (all the workgroup's invocations at `i = first + li +
            /// k * S`, `k` in order; docs/kernels.md, "Speed").
            pub const CPU_ROWS: bool = #rows;
            /// Whether the CPU form runs a task's workgroups side by side,
            /// phase by phase, as one (what each decides as one does not
            /// depend on which it is; docs/kernels.md, "Speed").
            pub const CPU_TOGETHER: bool = #together;
            /// The workgroup size every launch must use.
            pub const WORKGROUP_SIZE: (u32, u32, u32) = (#x, #y, #z);

            static SPEC: ::unigpu::kernel::generated::Spec = ::unigpu::kernel::generated::Spec {
                name: NAME,
                params: &[#(#specs),*],
                cuda: CUDA,
                wgsl: WGSL,
                wgsl_fma: WGSL_FMA_EMULATED,
                fma: [#(#fma),*],
                wide: [#(#wide),*],
                f64_math: #f64_math,
                subgroups: #subgroups,
                cpu,
                sites: &[#(#sites),*],
                workgroup: WORKGROUP_SIZE,
            };

            fn host_args<'a>(args: #arg_types) -> ::unigpu::Result<#host_types> {
                let (#(#arg_names,)*) = args;
                Ok((#(#host_values,)*))
            }

            /// The kernel built for a context (NVRTC compiles the CUDA
            /// form once per context and caches it; vulkan checks the WGSL).
            #[derive(Debug, Clone)]
            pub struct Kernel(::unigpu::Kernel);

            impl ::core::ops::Deref for Kernel {
                type Target = ::unigpu::Kernel;
                fn deref(&self) -> &::unigpu::Kernel {
                    &self.0
                }
            }

            /// Builds the kernel for `ctx`'s backend.
            pub fn kernel(ctx: &::unigpu::Context) -> ::unigpu::Result<Kernel> {
                ::unigpu::kernel::generated::build(ctx, &SPEC).map(Kernel)
            }

            impl Kernel {
                /// Launches on `ctx`'s default stream; `grid.block` must be
                /// [`WORKGROUP_SIZE`].
                pub fn launch<'a>(&self, ctx: &::unigpu::Context, grid: ::unigpu::Grid, args: #arg_types) -> ::unigpu::Result<()> {
                    ::unigpu::kernel::generated::check_block(NAME, &grid, WORKGROUP_SIZE)?;
                    ctx.launch(&self.0, grid, host_args(args)?)
                }

                /// Launches on `stream`; `grid.block` must be [`WORKGROUP_SIZE`].
                pub fn launch_on<'a>(&self, stream: &::unigpu::Stream, grid: ::unigpu::Grid, args: #arg_types) -> ::unigpu::Result<()> {
                    ::unigpu::kernel::generated::check_block(NAME, &grid, WORKGROUP_SIZE)?;
                    stream.launch(&self.0, grid, host_args(args)?)
                }
            }

            /// The CPU form: every workgroup a task, its invocations a loop
            /// (split into phases at barriers).
            #[allow(unused_mut, unused_variables, unused_labels, unused_assignments, unused_parens, unreachable_code, clippy::all)]
            pub fn cpu(__args: &::unigpu::CpuArgs) -> ::unigpu::Result<()> {
                #unpack
                #cpu_body
                Ok(())
            }
        }
    }
}
