//! The CPU backend's "device memory" is system RAM: its accounting is
//! `backend/host_memory.rs` (shared with the host pinned buffer); here, the
//! CPU's name.

use sysinfo::{RefreshKind, System};

pub(crate) use crate::backend::host_memory::{memory_info, try_alloc_vec};

/// The CPU's model name, for `unigpu info`.
pub(crate) fn cpu_name() -> String {
    let refresh = RefreshKind::nothing().with_cpu(sysinfo::CpuRefreshKind::nothing());
    let Ok(sys) = System::new_with_specifics(refresh) else {
        return "host CPU".into();
    };
    let brand = sys.cpus().first().map(|c| c.brand().trim().to_string());
    let threads = sys.cpus().len();
    match brand.filter(|b| !b.is_empty()) {
        Some(b) => format!("{b} ({threads} threads)"),
        None => format!("host CPU ({threads} threads)"),
    }
}
