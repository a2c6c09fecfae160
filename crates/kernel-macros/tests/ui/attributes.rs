use unigpu_kernel_macros::kernel;

#[kernel(threads = 64)]
fn unknown_option(out: &mut [f32]) {}

#[kernel(workgroup_size = (1, 2, 3, 4))]
fn four_dims(out: &mut [f32]) {}

#[kernel(workgroup_size = (8, n))]
fn not_a_number(out: &mut [f32]) {}

#[kernel(workgroup_size = (8, 0))]
fn zero(out: &mut [f32]) {}

#[kernel(workgroup_size = (64, 32))]
fn too_big(out: &mut [f32]) {}

#[kernel]
struct NotAFunction;

fn main() {}
