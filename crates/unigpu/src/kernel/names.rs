//! Kernel names by process-wide id, so a stream can remember its last
//! kernel with one atomic store and name it in an error found later.

use std::sync::{Arc, Mutex};

use crate::lock::lock;

/// Kernel names by id (index + 1). Only read when an error is reported.
static KERNEL_NAMES: Mutex<Vec<Arc<str>>> = Mutex::new(Vec::new());

pub(crate) fn register(name: &str) -> usize {
    let mut names = lock(&KERNEL_NAMES);
    if let Some(i) = names.iter().position(|n| &**n == name) {
        return i + 1;
    }
    names.push(name.into());
    names.len()
}

/// The name of kernel `id`, if it is one.
pub(crate) fn name_of(id: usize) -> Option<Arc<str>> {
    id.checked_sub(1)
        .and_then(|i| lock(&KERNEL_NAMES).get(i).cloned())
}
