// The macros' expansion names `::unigpu`: here, this crate.
extern crate unigpu_kernel_macros as unigpu;

use unigpu_kernel_macros::{device, kernel};

#[kernel(workgroup_size = 64)]
fn inside_an_expression(x: &[f32], out: &mut [f32]) {
    let i = global_id().x;
    let s = 2.0 * subgroup_add(x[i]);
    out[i] = s;
}

#[kernel(workgroup_size = 64)]
fn under_a_thread_branch(x: &[f32], out: &mut [f32]) {
    let i = global_id().x;
    if i < x.len() {
        let s = subgroup_max(x[i]);
        out[i] = s;
    }
}

#[kernel(workgroup_size = 64)]
fn after_a_thread_return(x: &[f32], out: &mut [f32]) {
    let i = global_id().x;
    if i >= x.len() {
        return;
    }
    let s = subgroup_min(x[i]);
    out[i] = s;
}

#[kernel(workgroup_size = 64)]
fn under_a_lane_branch(x: &[f32], out: &mut [f32]) {
    if subgroup_invocation_id() == 0 {
        let s = subgroup_add(x[0]);
        out[0] = s;
    }
}

// A loop by subgroup is fine for subgroup operations (short_rows.rs's
// softmax), not for a barrier.
#[kernel(workgroup_size = 64)]
fn barrier_in_a_loop_by_subgroup(x: &[f32], out: &mut [f32]) {
    let mut r = subgroup_id();
    while r < x.len() {
        let s = subgroup_add(x[r]);
        out[r] = s;
        barrier();
        r += 64 / subgroup_size();
    }
}

#[kernel(workgroup_size = 48)]
fn not_whole_warps(x: &[f32], out: &mut [f32]) {
    let i = global_id().x;
    let s = subgroup_add(x[i]);
    out[i] = s;
}

#[kernel(workgroup_size = 64)]
fn of_a_bool(x: &[f32], out: &mut [f32]) {
    let i = global_id().x;
    let b = subgroup_max(x[i] > 0.0);
    out[i] = 0.0;
}

#[kernel(workgroup_size = 64)]
fn size_with_an_argument(out: &mut [u32]) {
    out[0] = subgroup_size(1) as u32;
}

#[device]
fn in_a_device_function(v: f32) -> f32 {
    let s = subgroup_add(v);
    s
}

#[kernel(workgroup_size = 64)]
fn calls_it(x: &[f32], out: &mut [f32]) {
    let i = global_id().x;
    out[i] = in_a_device_function(x[i]);
}

fn main() {}
