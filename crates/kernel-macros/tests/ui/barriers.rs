use unigpu_kernel_macros::kernel;

#[kernel]
fn barrier_in_a_thread_branch(out: &mut [f32]) {
    if local_id().x < 16 {
        barrier();
    }
}

#[kernel]
fn barrier_in_a_loop_on_a_derived_value(out: &mut [f32]) {
    let i = global_id().x;
    let n = i / 2;
    for j in 0..n {
        barrier();
    }
}

#[kernel]
fn barrier_in_a_while_on_a_value_assigned_under_a_thread_branch(out: &mut [f32]) {
    let mut go = true;
    if local_id().x == 0 {
        go = false;
    }
    while go {
        barrier();
        go = false;
    }
}

#[kernel]
fn return_before_a_barrier(out: &mut [f32]) {
    if global_id().x >= out.len() {
        return;
    }
    barrier();
}

#[kernel]
fn break_from_a_loop_with_a_barrier(out: &mut [f32]) {
    loop {
        barrier();
        if local_id().x == 3 {
            break;
        }
    }
}

#[kernel]
fn barrier_as_a_value(out: &mut [f32]) {
    let b = barrier();
}

#[kernel]
fn barrier_with_arguments(out: &mut [f32]) {
    barrier(1);
}

#[kernel]
fn shared_in_a_branch(out: &mut [f32]) {
    if out.len() > 0 {
        let t = shared::<f32, 16>();
    }
}

#[kernel]
fn shared_without_a_length(out: &mut [f32]) {
    let t = shared::<f32>();
}

#[kernel]
fn shared_with_a_named_length(out: &mut [f32]) {
    let t = shared::<f32, N>();
}

#[kernel]
fn shared_empty(out: &mut [f32]) {
    let t = shared::<u32, 0>();
}

#[kernel]
fn shared_too_big(out: &mut [f32]) {
    let a = shared::<f32, 2049>();
    let b = shared::<f64, 1024>();
}

#[kernel]
fn shared_of_bools(out: &mut [f32]) {
    let t = shared::<bool, 4>();
}

#[kernel]
fn shared_of_halves(out: &mut [f32]) {
    let t = shared::<f16, 4>();
}

#[kernel]
fn shared_with_a_type_on_the_let(out: &mut [f32]) {
    let t: f32 = shared::<f32, 4>();
}

#[kernel]
fn shared_used_whole(out: &mut [f32]) {
    let t = shared::<f32, 4>();
    let u = t;
}

#[kernel]
fn shared_assigned_whole(out: &mut [f32]) {
    let t = shared::<f32, 4>();
    t = 1.0;
}

#[kernel]
fn shared_as_a_value(out: &mut [f32]) {
    let x = 1.0f32 + shared::<f32, 4>()[0];
}

#[kernel]
fn shared_element_of_the_wrong_type(out: &mut [f32]) {
    let t = shared::<u32, 4>();
    t[0] = 1.0f32;
}

fn main() {}
