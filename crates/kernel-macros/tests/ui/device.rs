// The macros' expansion names `::unigpu`: here, this crate.
extern crate unigpu_kernel_macros as unigpu;

use unigpu_kernel_macros::{device, kernel};

#[device]
fn itself(n: u32) -> u32 {
    if n == 0 {
        return 0;
    }
    itself(n - 1) + 1
}

#[kernel]
fn calls_a_recursive_function(out: &mut [u32]) {
    out[0] = itself(3);
}

#[device]
fn ping(n: u32) -> u32 {
    pong(n) + 1
}

#[device]
fn pong(n: u32) -> u32 {
    ping(n) * 2
}

#[kernel]
fn calls_mutual_recursion(out: &mut [u32]) {
    out[0] = ping(3);
}

#[device]
fn uses_a_thread_index(n: u32) -> u32 {
    n + global_id().x as u32
}

#[kernel]
fn k_thread_index(out: &mut [u32]) {
    out[0] = uses_a_thread_index(1);
}

#[device]
fn has_a_barrier(n: u32) -> u32 {
    barrier();
    n
}

#[kernel]
fn k_barrier(out: &mut [u32]) {
    out[0] = has_a_barrier(1);
}

#[device]
fn no_value(n: u32) {}

#[device]
fn takes_an_array(a: &[f32]) -> f32 {
    a[0]
}

#[device]
fn ends_with_a_statement(n: u32) -> u32 {
    let m = n;
}

#[kernel]
fn k_ends(out: &mut [u32]) {
    out[0] = ends_with_a_statement(1);
}

#[device]
fn bare_return(n: u32) -> u32 {
    if n == 0 {
        return;
    }
    n
}

#[kernel]
fn k_bare(out: &mut [u32]) {
    out[0] = bare_return(1);
}

#[device]
fn add(a: u32, b: u32) -> u32 {
    a + b
}

#[kernel]
fn wrong_count(out: &mut [u32]) {
    out[0] = add(1);
}

#[kernel]
fn wrong_type(out: &mut [u32]) {
    out[0] = add(1, 2.0f32);
}

#[kernel]
fn not_a_device_function(out: &mut [u32]) {
    out[0] = undefined(1);
}

fn main() {}
