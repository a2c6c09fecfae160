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

mod cpu;
mod cuda;
mod ir;
mod lower;
mod uniform;
mod wgsl;

use proc_macro::TokenStream;
use proc_macro2::TokenStream as Tokens;
use quote::{format_ident, quote};
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

fn expand(attr: Tokens, item: Tokens) -> syn::Result<Tokens> {
    let workgroup = workgroup(attr)?;
    let f: syn::ItemFn = syn::parse2(item)?;
    let params = lower::params(&f.sig)?;
    let (params, shared, body) = lower::body(params, &f.block)?;
    let k = Kernel {
        name: f.sig.ident.to_string(),
        params,
        shared,
        workgroup,
        body,
    };
    let cuda_src = cuda::emit(&k);
    let wgsl_src = wgsl::emit(&k);
    let cpu_body = cpu::body(&k);
    Ok(module(&f, &k, &cuda_src, &wgsl_src, cpu_body))
}

fn dtype(t: Ty) -> Tokens {
    let d = format_ident!("{}", t.name().to_uppercase());
    quote!(::unigpu::DType::#d)
}

fn module(f: &syn::ItemFn, k: &Kernel, cuda_src: &str, wgsl_src: &str, cpu_body: Tokens) -> Tokens {
    let vis = &f.vis;
    let attrs: Vec<_> = f
        .attrs
        .iter()
        .filter(|a| a.path().is_ident("doc"))
        .collect();
    let ident = &f.sig.ident;
    let name = &k.name;
    let [x, y, z] = k.workgroup;
    let specs = k.params.iter().map(|p| match p.kind {
        ParamKind::Array { elem, writable } => {
            let d = dtype(elem);
            quote!(::unigpu::kernel::generated::Param::Array { dtype: #d, writable: #writable })
        }
        ParamKind::Scalar(t) => {
            let d = dtype(t);
            quote!(::unigpu::kernel::generated::Param::Scalar(#d))
        }
    });
    let arg_types = k.params.iter().map(|p| match p.kind {
        ParamKind::Array {
            elem,
            writable: false,
        } => {
            let t = format_ident!("{}", elem.name());
            quote!(&'a ::unigpu::GpuArray<#t>)
        }
        ParamKind::Array {
            elem,
            writable: true,
        } => {
            let t = format_ident!("{}", elem.name());
            quote!(&'a mut ::unigpu::GpuArray<#t>)
        }
        ParamKind::Scalar(t) => {
            let t = format_ident!("{}", t.name());
            quote!(#t)
        }
    });
    let arg_types = quote!((#(#arg_types,)*));
    let unpack = k.params.iter().enumerate().map(|(i, p)| {
        let var = format_ident!("p_{}", p.name);
        let guard = format_ident!("__guard_{}", i);
        match p.kind {
            ParamKind::Array {
                elem,
                writable: false,
            } => {
                let t = format_ident!("{}", elem.name());
                quote! {
                    let #guard = __args.input::<#t>(#i)?;
                    let #var = ::unigpu::kernel::generated::Ro::<#t>::new(&#guard[..])?;
                }
            }
            ParamKind::Array {
                elem,
                writable: true,
            } => {
                let t = format_ident!("{}", elem.name());
                quote! {
                    let mut #guard = __args.output::<#t>(#i)?;
                    let #var = ::unigpu::kernel::generated::Rw::<#t>::new(&mut #guard[..])?;
                }
            }
            ParamKind::Scalar(t) => {
                let t = format_ident!("{}", t.name());
                quote!(let #var = __args.scalar::<#t>(#i)?;)
            }
        }
    });
    let doc = format!("The kernel `{name}` (#[unigpu::kernel]): build it with [`kernel`].");
    quote! {
        #(#attrs)*
        #[doc = #doc]
        #[allow(non_snake_case, non_camel_case_types, dead_code)]
        #vis mod #ident {
            /// The kernel's name.
            pub const NAME: &str = #name;
            /// The CUDA C++ the cuda and torch backends compile (NVRTC, `--fmad=false`).
            pub const CUDA: &str = #cuda_src;
            /// The WGSL the vulkan backend runs.
            pub const WGSL: &str = #wgsl_src;
            /// The workgroup size every launch must use.
            pub const WORKGROUP_SIZE: (u32, u32, u32) = (#x, #y, #z);

            static SPEC: ::unigpu::kernel::generated::Spec = ::unigpu::kernel::generated::Spec {
                name: NAME,
                params: &[#(#specs),*],
                cuda: CUDA,
                wgsl: WGSL,
                cpu,
            };

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
                    ctx.launch(&self.0, grid, args)
                }

                /// Launches on `stream`; `grid.block` must be [`WORKGROUP_SIZE`].
                pub fn launch_on<'a>(&self, stream: &::unigpu::Stream, grid: ::unigpu::Grid, args: #arg_types) -> ::unigpu::Result<()> {
                    ::unigpu::kernel::generated::check_block(NAME, &grid, WORKGROUP_SIZE)?;
                    stream.launch(&self.0, grid, args)
                }
            }

            /// The CPU form: every workgroup a task, its invocations a loop
            /// (split into phases at barriers).
            #[allow(unused_mut, unused_variables, unused_labels, unused_assignments, unused_parens, unreachable_code, clippy::all)]
            pub fn cpu(__args: &::unigpu::CpuArgs) -> ::unigpu::Result<()> {
                #(#unpack)*
                #cpu_body
                Ok(())
            }
        }
    }
}
