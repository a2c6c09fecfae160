//! Generic kernels: `#[unigpu::kernel(T = [f32, f64])] fn scale<T, const
//! N: usize>(...)`.
//!
//! A type parameter takes its types from a list in the attribute (no
//! bounds: the list says exactly what is instantiated, and f16/bf16,
//! which are storage types computed in f32, fit only where `T` is an array
//! element). The function is lowered once per combination of listed types,
//! with each type parameter replaced by the type's name (keeping the
//! parameter's span, so an error points at the use), and each combination
//! gets its own CUDA, WGSL and CPU forms.
//!
//! A const parameter (`const N: usize`) is a `usize` value known only at
//! the use site (`NAME::kernel::<f32, 64>(&ctx)`): the CUDA and WGSL
//! forms name it (`c_N`) and `generated::build_with` puts a `#define` /
//! `const` of its value before them (so NVRTC's caches, keyed by the
//! source, keep instantiations apart, and shared-array sizes are checked
//! then); the CPU form is a Rust function generic over it.
//!
//! The module has a sealed trait `Instance` implemented for the tuple of
//! each listed combination of types; `kernel::<...>` and the typed
//! `launch` are bounded by it, so a type outside the lists is a compile
//! error at the use.

use proc_macro2::{Group, Ident, Span, TokenStream as Tokens, TokenTree};
use quote::{ToTokens, format_ident, quote};
use syn::spanned::Spanned;

use crate::ir::{Kernel, ParamKind, Size, Ty};
use crate::{check_sites, cpu, cpu_unpack, cuda, lower, param_specs, rust_ty, site_table, wgsl};

/// At most this many combinations of listed types per kernel (each is
/// three emitted forms, compiled into the user's crate).
const MAX_INSTANCES: usize = 16;

/// The types a type parameter may list: those an array can hold.
const LISTABLE: &[&str] = &[
    "f32", "f64", "i32", "u32", "i64", "u64", "f16", "bf16", "u8",
];

struct TypeParam {
    ident: Ident,
    types: Vec<(String, Span)>,
}

enum Generic {
    Type(usize),
    Const(Ident),
}

/// Whether `f` is generic (then [`expand`] makes it).
pub fn is_generic(f: &syn::ItemFn) -> bool {
    !f.sig.generics.params.is_empty() || f.sig.generics.where_clause.is_some()
}

/// The module of a generic kernel.
pub fn expand(attr: Tokens, f: &syn::ItemFn, helpers: &[syn::ItemFn]) -> syn::Result<Tokens> {
    let g = &f.sig.generics;
    if let Some(w) = &g.where_clause {
        return Err(syn::Error::new(
            w.span(),
            "a kernel takes no `where` clause: a type parameter's types are listed in the attribute, `#[unigpu::kernel(T = [f32, f64])]`",
        ));
    }
    let mut types: Vec<TypeParam> = Vec::new();
    let mut order = Vec::new();
    for p in &g.params {
        match p {
            syn::GenericParam::Lifetime(l) => {
                return Err(syn::Error::new(
                    l.span(),
                    "a kernel takes no lifetime parameters",
                ));
            }
            syn::GenericParam::Type(t) => {
                if !t.bounds.is_empty() {
                    return Err(syn::Error::new(
                        t.bounds.span(),
                        format!(
                            "a kernel's type parameter has no bounds: list its types in the attribute, `#[unigpu::kernel({} = [f32, f64])]`",
                            t.ident
                        ),
                    ));
                }
                if let Some(d) = &t.default {
                    return Err(syn::Error::new(
                        d.span(),
                        "a kernel's type parameter has no default",
                    ));
                }
                order.push(Generic::Type(types.len()));
                types.push(TypeParam {
                    ident: t.ident.clone(),
                    types: Vec::new(),
                });
            }
            syn::GenericParam::Const(c) => {
                if !matches!(&c.ty, syn::Type::Path(p) if p.path.is_ident("usize")) {
                    return Err(syn::Error::new(
                        c.ty.span(),
                        "a kernel's const parameter is a `usize` (`const N: usize`)",
                    ));
                }
                if let Some(d) = &c.default {
                    return Err(syn::Error::new(
                        d.span(),
                        "a kernel's const parameter has no default: its value is given at the use, `NAME::kernel::<16>(&ctx)`",
                    ));
                }
                order.push(Generic::Const(c.ident.clone()));
            }
        }
    }
    let consts: Vec<Ident> = order
        .iter()
        .filter_map(|g| match g {
            Generic::Const(c) => Some(c.clone()),
            Generic::Type(_) => None,
        })
        .collect();
    let workgroup = options(attr, &mut types, &consts)?;
    for t in &types {
        if t.types.is_empty() {
            return Err(syn::Error::new(
                t.ident.span(),
                format!(
                    "type parameter `{0}` needs its list of types in the attribute: `#[unigpu::kernel({0} = [f32, f64])]`",
                    t.ident
                ),
            ));
        }
    }
    let count: usize = types.iter().map(|t| t.types.len()).product();
    if count > MAX_INSTANCES {
        return Err(syn::Error::new(
            g.span(),
            format!(
                "{count} combinations of listed types: at most {MAX_INSTANCES} per kernel (each is compiled into three forms)"
            ),
        ));
    }
    let const_names: Vec<String> = consts.iter().map(|c| c.to_string()).collect();
    let funcs = lower::funcs(helpers)?;
    let mut instances = Vec::new();
    for n in 0..count {
        // The n-th combination, the last type parameter varying fastest.
        let mut chosen = Vec::new();
        let mut rest = n;
        for t in types.iter().rev() {
            chosen.push(t.types[rest % t.types.len()].0.clone());
            rest /= t.types.len();
        }
        chosen.reverse();
        let label = format!("{}::<{}>", f.sig.ident, chosen.join(", "));
        let inst = substitute(f, &types, &chosen)?;
        let lowered = (|| {
            let params = lower::params(&inst.sig)?;
            lower::body(params, &const_names, &inst.block, helpers, workgroup)
        })();
        let (params, shared, body, sites) = lowered.map_err(|e| in_instance(e, &label, count))?;
        check_sites(f, &sites)?;
        let k = Kernel {
            name: f.sig.ident.to_string(),
            params,
            shared,
            funcs: funcs.clone(),
            workgroup,
            body,
            sites,
        };
        instances.push((chosen, k));
    }
    Ok(module(f, &types, &order, &consts, &instances))
}

/// An error in one instantiation, saying which (when there are several).
fn in_instance(e: syn::Error, label: &str, count: usize) -> syn::Error {
    if count < 2 {
        return e;
    }
    let mut out: Option<syn::Error> = None;
    for one in e {
        let mine = syn::Error::new(one.span(), format!("in `{label}`: {one}"));
        match &mut out {
            Some(o) => o.combine(mine),
            None => out = Some(mine),
        }
    }
    out.unwrap_or_else(|| syn::Error::new(Span::call_site(), label))
}

/// Reads `workgroup_size = ...` (as a plain kernel does) and the lists of
/// types, `T = [f32, f64]`; gives the workgroup size.
fn options(attr: Tokens, types: &mut [TypeParam], consts: &[Ident]) -> syn::Result<[u32; 3]> {
    let mut workgroup = Tokens::new();
    let items: Vec<Vec<TokenTree>> = {
        let mut items = vec![Vec::new()];
        for tt in attr {
            match &tt {
                TokenTree::Punct(p) if p.as_char() == ',' => items.push(Vec::new()),
                _ => items.last_mut().expect("one item").push(tt),
            }
        }
        items.into_iter().filter(|i| !i.is_empty()).collect()
    };
    for item in items {
        let name = match &item[0] {
            TokenTree::Ident(i) => i.clone(),
            other => {
                return Err(syn::Error::new(
                    other.span(),
                    "expected `workgroup_size = ...` or a type parameter's list, `T = [f32, f64]`",
                ));
            }
        };
        if name == "workgroup_size" {
            if !workgroup.is_empty() {
                workgroup.extend(quote!(,));
            }
            workgroup.extend(item);
            continue;
        }
        if consts.contains(&name) {
            return Err(syn::Error::new(
                name.span(),
                format!(
                    "const parameter `{name}` takes its value where the kernel is built, `NAME::kernel::<16>(&ctx)`, not in the attribute"
                ),
            ));
        }
        let Some(t) = types.iter_mut().find(|t| t.ident == name) else {
            return Err(syn::Error::new(
                name.span(),
                format!(
                    "unknown kernel option `{name}`: the options are `workgroup_size = ...` and a list of types for each type parameter, `T = [f32, f64]`"
                ),
            ));
        };
        if !t.types.is_empty() {
            return Err(syn::Error::new(
                name.span(),
                format!("the types of `{name}` are listed twice"),
            ));
        }
        let list = match item.get(2) {
            Some(TokenTree::Group(g))
                if g.delimiter() == proc_macro2::Delimiter::Bracket
                    && item.len() == 3
                    && matches!(&item[1], TokenTree::Punct(p) if p.as_char() == '=') =>
            {
                g.clone()
            }
            _ => {
                return Err(syn::Error::new(
                    item.last().map_or(name.span(), |t| t.span()),
                    format!("the types of `{name}` are a list: `{name} = [f32, f64]`"),
                ));
            }
        };
        let tys = syn::parse::Parser::parse2(
            syn::punctuated::Punctuated::<syn::Ident, syn::Token![,]>::parse_terminated,
            list.stream(),
        )?;
        for ty in tys {
            let n = ty.to_string();
            if !LISTABLE.contains(&n.as_str()) {
                return Err(syn::Error::new(
                    ty.span(),
                    format!(
                        "`{n}` cannot be listed for a type parameter: the types are f32, f64, i32, u32, i64, u64, f16, bf16 and u8 (those an array holds)"
                    ),
                ));
            }
            if t.types.iter().any(|(o, _)| *o == n) {
                return Err(syn::Error::new(ty.span(), format!("`{n}` is listed twice")));
            }
            t.types.push((n, ty.span()));
        }
        if t.types.is_empty() {
            return Err(syn::Error::new(
                list.span(),
                format!("the list of `{name}`'s types is empty"),
            ));
        }
    }
    crate::workgroup(workgroup)
}

/// `f` with each type parameter replaced by its chosen type, as written
/// at each use (so a type error points there), and no generics.
fn substitute(f: &syn::ItemFn, types: &[TypeParam], chosen: &[String]) -> syn::Result<syn::ItemFn> {
    fn walk(t: Tokens, types: &[TypeParam], chosen: &[String]) -> Tokens {
        t.into_iter()
            .map(|tt| match tt {
                TokenTree::Ident(i) => match types.iter().position(|t| t.ident == i) {
                    Some(k) => TokenTree::Ident(Ident::new(&chosen[k], i.span())),
                    None => TokenTree::Ident(i),
                },
                TokenTree::Group(g) => {
                    let mut n = Group::new(g.delimiter(), walk(g.stream(), types, chosen));
                    n.set_span(g.span());
                    TokenTree::Group(n)
                }
                other => other,
            })
            .collect()
    }
    let mut sig = f.sig.clone();
    sig.generics = syn::Generics::default();
    let inputs = walk(sig.inputs.to_token_stream(), types, chosen);
    sig.inputs = syn::parse::Parser::parse2(
        syn::punctuated::Punctuated::<syn::FnArg, syn::Token![,]>::parse_terminated,
        inputs,
    )?;
    let block = syn::parse2(walk(f.block.to_token_stream(), types, chosen))?;
    Ok(syn::ItemFn {
        attrs: Vec::new(),
        vis: f.vis.clone(),
        sig,
        block,
    })
}

/// The Rust type of the generic signature's parameter `i`, as the typed
/// launch takes it: a type parameter stays itself.
fn arg_type(f: &syn::ItemFn, i: usize, k: &Kernel, types: &[TypeParam]) -> Tokens {
    let param_of = |t: &syn::Type| -> Option<Ident> {
        match t {
            syn::Type::Path(p) => types
                .iter()
                .find(|tp| p.path.is_ident(&tp.ident))
                .map(|tp| tp.ident.clone()),
            _ => None,
        }
    };
    let declared = match f.sig.inputs.iter().nth(i) {
        Some(syn::FnArg::Typed(pt)) => Some(&*pt.ty),
        _ => None,
    };
    let generic = declared.and_then(|t| match t {
        syn::Type::Reference(r) => match &*r.elem {
            syn::Type::Slice(s) => param_of(&s.elem),
            _ => None,
        },
        t => param_of(t),
    });
    match (k.params[i].kind, generic) {
        (ParamKind::Array { writable, elem }, g) => {
            let t = g.map_or_else(|| rust_ty(elem), |g| g.to_token_stream());
            if writable {
                quote!(&'a mut ::unigpu::GpuArray<#t>)
            } else {
                quote!(&'a ::unigpu::GpuArray<#t>)
            }
        }
        (ParamKind::Scalar(_), Some(g)) => g.to_token_stream(),
        (ParamKind::Scalar(t), None) => rust_ty(t),
    }
}

fn module(
    f: &syn::ItemFn,
    types: &[TypeParam],
    order: &[Generic],
    consts: &[Ident],
    instances: &[(Vec<String>, Kernel)],
) -> Tokens {
    let vis = &f.vis;
    let attrs: Vec<_> = f
        .attrs
        .iter()
        .filter(|a| a.path().is_ident("doc"))
        .collect();
    let ident = &f.sig.ident;
    let first = &instances[0].1;
    let name = &first.name;
    let [x, y, z] = first.workgroup;
    let g = quote!(::unigpu::kernel::generated);
    let tparams: Vec<&Ident> = types.iter().map(|t| &t.ident).collect();
    // `<T, const N: usize>` as declared, and `<T, N>` to name an instance.
    let decl = order.iter().map(|o| match o {
        Generic::Type(k) => types[*k].ident.to_token_stream(),
        Generic::Const(c) => quote!(const #c: usize),
    });
    let decl = quote!(<#(#decl),*>);
    let uses = order.iter().map(|o| match o {
        Generic::Type(k) => types[*k].ident.to_token_stream(),
        Generic::Const(c) => c.to_token_stream(),
    });
    let uses = quote!(<#(#uses),*>);
    let const_decl = quote!(<#(const #consts: usize),*>);
    let const_uses = quote!(<#(#consts),*>);
    let key = quote!((#(#tparams,)*));
    let const_values = consts.iter().map(|c| {
        let n = lower::const_name(&c.to_string());
        quote!((#n, #c))
    });
    let const_values = quote!(&[#(#const_values),*]);
    let bounds = quote! {
        #key: Instance,
        #(#tparams: ::unigpu::Element + for<'x> ::unigpu::kernel::KernelArg<'x>,)*
    };
    let impls = instances.iter().enumerate().map(|(n, (chosen, k))| {
        let m = format_ident!("__i{}", n);
        let tys = chosen.iter().map(|c| match c.as_str() {
            "f16" => quote!(::unigpu::f16),
            "bf16" => quote!(::unigpu::bf16),
            c => format_ident!("{}", c).to_token_stream(),
        });
        let key = quote!((#(#tys,)*));
        let cuda_src = cuda::emit(k);
        let wgsl_src = wgsl::emit(k, false);
        let wgsl_fma = if k.uses_fma(Ty::F32) {
            wgsl::emit(k, true)
        } else {
            String::new()
        };
        let fma = [k.uses_fma(Ty::F32), k.uses_fma(Ty::F64)];
        let f64_math = k.f64_only_f32_math();
        let subgroups = k.uses_subgroups();
        let wide = [
            k.uses(|t| t == Ty::F64),
            k.uses(|t| matches!(t, Ty::I64 | Ty::U64)),
        ];
        let shared = k.shared.iter().map(|s| {
            let bytes = s.elem.bits() as u64 / 8;
            match &s.len {
                Size::Lit(l) => quote!((#bytes, #l as u64)),
                Size::Const(c) => {
                    let c = format_ident!("{}", c.trim_start_matches("c_"));
                    quote!((#bytes, #c as u64))
                }
            }
        });
        let cpu_fn = cpu_fn(k, consts);
        let grid_stride = crate::stride::analyse(k).is_some();
        let label = format!("`{name}` for {}", chosen.join(", "));
        quote! {
            #[doc(hidden)]
            pub mod #m {
                #cpu_fn
            }
            impl __sealed::Sealed for #key {}
            #[doc = #label]
            impl Instance for #key {
                const CUDA: &'static str = #cuda_src;
                const WGSL: &'static str = #wgsl_src;
                const WGSL_FMA_EMULATED: &'static str = #wgsl_fma;
                const CPU_GRID_STRIDE: bool = #grid_stride;
                fn __spec #const_decl () -> &'static #g::Spec {
                    // A constant per instance (the CPU form depends on the
                    // const parameters): `'static`, as out-of-bounds
                    // reports keep its sites.
                    const {
                        &#g::Spec {
                            name: NAME,
                            params: #m::PARAMS,
                            cuda: Self::CUDA,
                            wgsl: Self::WGSL,
                            wgsl_fma: Self::WGSL_FMA_EMULATED,
                            fma: [#(#fma),*],
                            wide: [#(#wide),*],
                            f64_math: #f64_math,
                            subgroups: #subgroups,
                            cpu: #m::cpu::#const_uses,
                            sites: #m::SITES,
                            workgroup: WORKGROUP_SIZE,
                        }
                    }
                }
                fn __shared #const_decl () -> ::std::vec::Vec<(u64, u64)> {
                    ::std::vec![#(#shared),*]
                }
            }
        }
    });
    let arg_types: Vec<Tokens> = (0..first.params.len())
        .map(|i| arg_type(f, i, first, types))
        .collect();
    let arg_names: Vec<_> = (0..first.params.len())
        .map(|i| format_ident!("__a{}", i))
        .collect();
    let host_values = first.params.iter().enumerate().map(|(i, p)| {
        let a = &arg_names[i];
        let v = match p.kind {
            ParamKind::Scalar(Ty::Bool) => quote!(u32::from(#a)),
            ParamKind::Scalar(Ty::Usize) => quote!(#g::usize_arg(NAME, #i, #a)?),
            _ => quote!(#a),
        };
        quote!(::unigpu::kernel::KernelArg::into_arg(#v))
    });
    let arg_tuple = quote!((#(#arg_types,)*));
    let listed: Vec<String> = types
        .iter()
        .map(|t| {
            let l: Vec<&str> = t.types.iter().map(|(n, _)| n.as_str()).collect();
            format!("`{}` in [{}]", t.ident, l.join(", "))
        })
        .collect();
    let doc = format!(
        "The generic kernel `{name}` (#[unigpu::kernel]): build an instance with [`kernel`]{}.",
        if listed.is_empty() {
            String::new()
        } else {
            format!(", {}", listed.join(", "))
        }
    );
    quote! {
        #(#attrs)*
        #[doc = #doc]
        #[allow(non_snake_case, non_camel_case_types, dead_code)]
        #vis mod #ident {
            /// The kernel's name.
            pub const NAME: &str = #name;
            /// The workgroup size every launch must use.
            pub const WORKGROUP_SIZE: (u32, u32, u32) = (#x, #y, #z);

            #[doc(hidden)]
            pub mod __sealed {
                pub trait Sealed {}
            }

            /// Implemented for the tuple of the kernel's type arguments,
            /// `(T, ...)`, for each combination the attribute lists (`()`
            /// for a kernel generic over const sizes only).
            pub trait Instance: __sealed::Sealed {
                /// The CUDA C++, before the `#define`s of the const
                /// parameters ([`cuda`] gives the whole).
                const CUDA: &'static str;
                /// The WGSL, before the `const`s of the const parameters
                /// ([`wgsl`] gives the whole).
                const WGSL: &'static str;
                /// The WGSL with f32 `fma` emulated, as `WGSL`; empty
                /// without f32 `fma`.
                const WGSL_FMA_EMULATED: &'static str;
                /// Whether this instance's CPU form has the grid-stride
                /// fast path (docs/kernels.md, "Speed"), as a plain
                /// kernel's `CPU_GRID_STRIDE`.
                const CPU_GRID_STRIDE: bool;
                #[doc(hidden)]
                fn __spec #const_decl () -> &'static #g::Spec;
                /// The shared arrays: (bytes an element, length).
                #[doc(hidden)]
                fn __shared #const_decl () -> ::std::vec::Vec<(u64, u64)>;
            }

            #(#impls)*

            /// The instance's CUDA C++, as NVRTC compiles it.
            pub fn cuda #decl () -> ::std::string::String where #bounds {
                #g::instance_cuda(<#key as Instance>::CUDA, #const_values)
            }

            /// The instance's WGSL (`fma_emulated`: the form for an adapter
            /// whose `fma` rounds twice; empty without f32 `fma`).
            pub fn wgsl #decl (fma_emulated: bool) -> ::std::string::String where #bounds {
                let src = if fma_emulated { <#key as Instance>::WGSL_FMA_EMULATED } else { <#key as Instance>::WGSL };
                if src.is_empty() {
                    return ::std::string::String::new();
                }
                #g::instance_wgsl(src, #const_values)
            }

            /// One instance built for a context.
            pub struct Kernel #decl (::unigpu::Kernel, ::core::marker::PhantomData<fn() -> #key>);

            impl #decl ::core::clone::Clone for Kernel #uses {
                fn clone(&self) -> Self {
                    Kernel(self.0.clone(), ::core::marker::PhantomData)
                }
            }

            impl #decl ::core::fmt::Debug for Kernel #uses {
                fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                    self.0.fmt(f)
                }
            }

            impl #decl ::core::ops::Deref for Kernel #uses {
                type Target = ::unigpu::Kernel;
                fn deref(&self) -> &::unigpu::Kernel {
                    &self.0
                }
            }

            /// Builds the instance for `ctx`'s backend (`NAME::kernel::<f32>(&ctx)`,
            /// `NAME::kernel::<16>(&ctx)`): const parameters are checked
            /// here (32 bits; the shared arrays they size non-empty and
            /// within 16384 bytes).
            pub fn kernel #decl (ctx: &::unigpu::Context) -> ::unigpu::Result<Kernel #uses> where #bounds {
                #g::build_with(
                    ctx,
                    <#key as Instance>::__spec::#const_uses(),
                    #const_values,
                    &<#key as Instance>::__shared::#const_uses(),
                )
                .map(|k| Kernel(k, ::core::marker::PhantomData))
            }

            fn host_args<'a, #(#tparams),*>(args: #arg_tuple) -> ::unigpu::Result<::std::vec::Vec<::unigpu::Arg<'a>>>
            where #(#tparams: ::unigpu::Element + for<'x> ::unigpu::kernel::KernelArg<'x>,)*
            {
                let (#(#arg_names,)*) = args;
                Ok(::std::vec![#(#host_values),*])
            }

            impl #decl Kernel #uses where #bounds {
                /// Launches on `ctx`'s default stream; `grid.block` must be
                /// [`WORKGROUP_SIZE`].
                pub fn launch<'a>(&self, ctx: &::unigpu::Context, grid: ::unigpu::Grid, args: #arg_tuple) -> ::unigpu::Result<()> {
                    #g::check_block(NAME, &grid, WORKGROUP_SIZE)?;
                    ctx.launch(&self.0, grid, host_args(args)?)
                }

                /// Launches on `stream`; `grid.block` must be [`WORKGROUP_SIZE`].
                pub fn launch_on<'a>(&self, stream: &::unigpu::Stream, grid: ::unigpu::Grid, args: #arg_tuple) -> ::unigpu::Result<()> {
                    #g::check_block(NAME, &grid, WORKGROUP_SIZE)?;
                    stream.launch(&self.0, grid, host_args(args)?)
                }
            }
        }
    }
}

/// One instance's parameter list and CPU form, generic over the const
/// parameters (whose values it binds to their emitted names first), and
/// its site table. The arguments (and the fault word and code after them)
/// are unpacked as for a plain kernel.
fn cpu_fn(k: &Kernel, consts: &[Ident]) -> Tokens {
    let specs = param_specs(k);
    let unpack = cpu_unpack(k);
    let sites = site_table(k);
    // build_with has checked that each value fits 32 bits.
    let bind = consts.iter().map(|c| {
        let n = format_ident!("{}", lower::const_name(&c.to_string()));
        quote!(#[allow(unused_variables)] let #n: u32 = #c as u32;)
    });
    let rebind = quote!(#(#bind)*);
    let body = cpu::body(k, &rebind);
    quote! {
        pub static PARAMS: &[::unigpu::kernel::generated::Param] = &[#(#specs),*];
        /// Every place the instance indexes an array (its own table: the
        /// instances of one type combination share it whatever the const
        /// parameters, as their sites are the same).
        pub static SITES: &[::unigpu::kernel::generated::Site] = &[#(#sites),*];

        /// The CPU form: every workgroup a task, its invocations a loop
        /// (split into phases at barriers).
        #[allow(unused_mut, unused_variables, unused_labels, unused_assignments, unused_parens, unreachable_code, clippy::all)]
        pub fn cpu<#(const #consts: usize),*>(__args: &::unigpu::CpuArgs) -> ::unigpu::Result<()> {
            #rebind
            #unpack
            #body
            Ok(())
        }
    }
}
