use unigpu_kernel_macros::kernel;

#[kernel]
fn on_a_read_only_array(a: &[u32], out: &mut [u32]) {
    a.atomic_add(0, 1);
}

#[kernel]
fn on_floats(out: &mut [f32]) {
    out.atomic_add(0, 1.0);
}

#[kernel]
fn on_64_bits(out: &mut [u64]) {
    out.atomic_max(0, 1);
}

#[kernel]
fn on_a_shared_float_array(out: &mut [u32]) {
    let t = shared::<f32, 4>();
    t.atomic_min(0, 1.0);
}

#[kernel]
fn on_a_local(out: &mut [u32]) {
    let x = 1u32;
    x.atomic_add(0, 1);
}

#[kernel]
fn too_few_arguments(out: &mut [u32]) {
    out.atomic_add(0);
}

#[kernel]
fn compare_exchange_with_two(out: &mut [u32]) {
    out.atomic_compare_exchange(0, 1);
}

#[kernel]
fn value_of_the_wrong_type(out: &mut [i32]) {
    out.atomic_or(0, 1u32);
}

#[kernel]
fn index_of_the_wrong_type(out: &mut [i32]) {
    out.atomic_xor(1u32, 1);
}

fn main() {}
