//! The validated spec model that the emitters read. Everything here has been
//! checked: names are valid identifiers and unique, types resolve, and every
//! function and method has exactly one C++ implementation.

/// A number type usable as a scalar and as a slice or `Vec` element.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Num {
    I8,
    I16,
    I32,
    I64,
    U8,
    U16,
    U32,
    U64,
    Usize,
    F32,
    F64,
}

impl Num {
    pub const ALL: [Num; 11] = [
        Num::I8,
        Num::I16,
        Num::I32,
        Num::I64,
        Num::U8,
        Num::U16,
        Num::U32,
        Num::U64,
        Num::Usize,
        Num::F32,
        Num::F64,
    ];

    /// The spelling in specs and in Rust.
    pub fn rust(self) -> &'static str {
        match self {
            Num::I8 => "i8",
            Num::I16 => "i16",
            Num::I32 => "i32",
            Num::I64 => "i64",
            Num::U8 => "u8",
            Num::U16 => "u16",
            Num::U32 => "u32",
            Num::U64 => "u64",
            Num::Usize => "usize",
            Num::F32 => "f32",
            Num::F64 => "f64",
        }
    }

    /// The C type (`<stdint.h>`/`<stddef.h>`).
    pub fn c(self) -> &'static str {
        match self {
            Num::I8 => "int8_t",
            Num::I16 => "int16_t",
            Num::I32 => "int32_t",
            Num::I64 => "int64_t",
            Num::U8 => "uint8_t",
            Num::U16 => "uint16_t",
            Num::U32 => "uint32_t",
            Num::U64 => "uint64_t",
            Num::Usize => "size_t",
            Num::F32 => "float",
            Num::F64 => "double",
        }
    }

    /// The C++ type, as cxx spells it.
    pub fn cpp(self) -> &'static str {
        match self {
            Num::I8 => "::std::int8_t",
            Num::I16 => "::std::int16_t",
            Num::I32 => "::std::int32_t",
            Num::I64 => "::std::int64_t",
            Num::U8 => "::std::uint8_t",
            Num::U16 => "::std::uint16_t",
            Num::U32 => "::std::uint32_t",
            Num::U64 => "::std::uint64_t",
            Num::Usize => "::std::size_t",
            Num::F32 => "float",
            Num::F64 => "double",
        }
    }

    pub fn from_name(s: &str) -> Option<Num> {
        Num::ALL.into_iter().find(|n| n.rust() == s)
    }
}

/// A resolved type. Handles are indices into [`Spec::handles`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ty {
    Void,
    Bool,
    Num(Num),
    /// `str`: a borrowed string as a parameter, an owned string as a return.
    Str,
    /// `&[T]`: a borrowed input slice (parameter only).
    Slice(Num),
    /// `&mut [T]`: a caller-owned buffer the C++ side fills (parameter only).
    SliceMut(Num),
    /// `Vec<T>`: an owned array (return only).
    Vec(Num),
    /// `&H` / `&mut H`: a handle passed by reference (parameter only).
    HandleRef {
        handle: usize,
        mutable: bool,
    },
    /// `H`: an owned handle (return only).
    HandleOwned(usize),
}

/// A parameter of a function or method.
#[derive(Debug, Clone)]
pub struct Param {
    pub name: String,
    pub ty: Ty,
}

/// A handle type: an opaque C++ object owned across the FFI.
#[derive(Debug, Clone)]
pub struct Handle {
    /// CamelCase name: the Rust type in tiers 1 and 3.
    pub name: String,
    /// snake_case of `name`.
    pub snake: String,
    /// The C type name, `prefix_snake` (never a doubled prefix).
    pub c_name: String,
    /// The C++ type it stands for.
    pub cpp_type: String,
    pub doc: Option<String>,
    /// Why the C++ type may be used from several threads at once; the handle
    /// is Send + Sync when set.
    pub thread_safe: Option<String>,
}

/// Where a piece of C++ came from, for `#line` directives.
#[derive(Debug, Clone)]
pub struct CppSource {
    pub code: String,
    /// 1-based line of the first line of `code` in the spec file.
    pub line: u64,
}

/// How a function or method is implemented in C++.
#[derive(Debug, Clone)]
pub enum CppImpl {
    /// `cpp_fn`: a C++ lambda called with the parameters (and, for methods, `self` first).
    Lambda(CppSource),
    /// `cpp_method: name`: a member function of the handle's C++ type.
    Member(String),
    /// `cpp_body`: a function body; parameters (and `self`) are in scope.
    Body(CppSource),
}

/// A free function or a method; methods have `receiver` set.
#[derive(Debug, Clone)]
pub struct Function {
    /// The name as written in the spec.
    pub name: String,
    /// The exported C symbol: prefix joined once.
    pub c_name: String,
    /// The name in the cxx bridge and C++ bridge (unique per spec).
    pub bridge_name: String,
    /// The name in the safe Rust tier.
    pub rust_name: String,
    pub doc: Option<String>,
    pub params: Vec<Param>,
    pub ret: Ty,
    pub imp: CppImpl,
    pub receiver: Option<Receiver>,
    /// `Some`: the Rust tiers declare the call `unsafe`, with this as its
    /// `# Safety` contract (raw pointers passed as integers, for example).
    pub safety: Option<String>,
}

/// The handle a method is called on.
#[derive(Debug, Clone, Copy)]
pub struct Receiver {
    pub handle: usize,
    /// `const: true`: the method takes `&self` / `const T&`.
    pub is_const: bool,
}

/// A validated spec.
#[derive(Debug, Clone)]
pub struct Spec {
    /// The spec path as displayed (repository-relative).
    pub file: String,
    pub library: String,
    /// Where `library`'s value is written: 1-based line and column.
    pub library_at: (u64, u64),
    pub prefix: String,
    pub namespace: String,
    pub rust_crate: String,
    pub doc: Option<String>,
    pub includes: Vec<String>,
    pub handles: Vec<Handle>,
    pub functions: Vec<Function>,
    pub methods: Vec<Function>,
}

impl Spec {
    /// Functions then methods.
    pub fn all_functions(&self) -> impl Iterator<Item = &Function> {
        self.functions.iter().chain(self.methods.iter())
    }

    /// `Vec<T>` element types returned anywhere, sorted, deduplicated.
    pub fn vec_returns(&self) -> Vec<Num> {
        let mut v: Vec<Num> = self
            .all_functions()
            .filter_map(|f| match f.ret {
                Ty::Vec(n) => Some(n),
                _ => None,
            })
            .collect();
        v.sort();
        v.dedup();
        v
    }

    /// Whether any function returns a string.
    pub fn returns_str(&self) -> bool {
        self.all_functions().any(|f| f.ret == Ty::Str)
    }

    /// The C name of the status enum, e.g. `ug_fixture_status`.
    pub fn c_status(&self) -> String {
        format!("{}_status", self.prefix)
    }

    /// Upper-case prefix for C constants and the include guard.
    pub fn upper(&self) -> String {
        self.prefix.to_ascii_uppercase()
    }

    /// Repository-relative paths of the generated files.
    pub fn bridge_header_path(&self) -> String {
        format!("bridge/{0}/{0}_bridge.h", self.library)
    }
    pub fn bridge_source_path(&self) -> String {
        format!("bridge/{0}/{0}_bridge.cc", self.library)
    }
    /// The bridge header as included (relative to `bridge/`).
    pub fn bridge_header_include(&self) -> String {
        format!("{0}/{0}_bridge.h", self.library)
    }
    pub fn c_header_path(&self) -> String {
        format!("include/{}.h", self.prefix)
    }
    pub fn rust_path(&self, module: &str) -> String {
        format!("{}/src/generated/{module}.rs", self.rust_crate)
    }

    /// The `c_name` fixed symbols of the C ABI that are always generated.
    pub fn last_error_fn(&self) -> String {
        format!("{}_last_error_message", self.prefix)
    }
    pub fn string_free_fn(&self) -> String {
        format!("{}_string_free", self.prefix)
    }
    pub fn array_free_fn(&self, n: Num) -> String {
        format!("{}_{}_array_free", self.prefix, n.rust())
    }
    pub fn handle_free_fn(&self, h: &Handle) -> String {
        format!("{}_free", h.c_name)
    }
}

/// The do-not-edit line every generated file starts with (after the comment leader).
pub fn do_not_edit(spec_file: &str) -> String {
    format!(
        "@generated by `cargo xtask gen` from {spec_file}. Do not edit: edit the spec and rerun `cargo xtask gen`."
    )
}
