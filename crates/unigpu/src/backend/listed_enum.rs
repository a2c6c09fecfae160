//! `listed_enum!`: an enum and its `ALL` array from one list of variants.
//!
//! `Backend::ALL` is the one list of backends (the fallback chain, config
//! parsing, error messages, `unigpu info`, the Python names) and
//! `DeviceKind::ALL` the one list of device kinds. Written by hand, a new
//! variant could be left out of its list and nothing would fail to
//! compile; declared by this macro, it cannot be.

/// `listed_enum! { #[doc] pub enum Name { A, B, } #[doc] ALL }` declares
/// the enum and `Name::ALL`, every variant in declaration order.
macro_rules! listed_enum {
    (
        $(#[$meta:meta])*
        pub enum $name:ident { $($(#[$variant_meta:meta])* $variant:ident,)+ }
        $(#[$all_meta:meta])*
        ALL
    ) => {
        $(#[$meta])*
        pub enum $name {
            $($(#[$variant_meta])* $variant,)+
        }

        impl $name {
            $(#[$all_meta])*
            pub const ALL: [$name; [$($name::$variant),+].len()] = [$($name::$variant),+];
        }
    };
}

pub(super) use listed_enum;
