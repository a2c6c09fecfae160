use unigpu_kernel_macros::kernel;

#[kernel]
fn item(out: &mut [f32]) {
    fn helper() {}
}

#[kernel]
fn macro_statement(out: &mut [f32]) {
    println!("hi");
}

#[kernel]
fn tuple_let(out: &mut [f32]) {
    let (a, b) = (1, 2);
}

#[kernel]
fn ref_let(out: &mut [f32]) {
    let ref a = 1;
}

#[kernel]
fn vec_let(out: &mut [f32]) {
    let a: Vec<f32> = 1;
}

#[kernel]
fn uninit_let(out: &mut [f32]) {
    let a: f32;
}

#[kernel]
fn let_else(out: &mut [f32]) {
    let a = 1 else { return; };
}

#[kernel]
fn let_mismatch(out: &mut [f32]) {
    let a: u32 = 1.5;
}

#[kernel]
fn path_assign(out: &mut [f32]) {
    std::x = 1;
}

#[kernel]
fn immutable(out: &mut [f32]) {
    let a = 1;
    a = 2;
}

#[kernel]
fn param_assign(n: u32) {
    n = 2;
}

#[kernel]
fn unknown_assign(out: &mut [f32]) {
    b = 2;
}

#[kernel]
fn read_only(a: &[f32]) {
    a[0] = 1.0;
}

#[kernel]
fn field_assign(out: &mut [f32]) {
    global_id().x = 1;
}

#[kernel]
fn assign_mismatch(out: &mut [f32]) {
    out[0] = 1u32;
}

#[kernel]
fn labelled_block(out: &mut [f32]) {
    'a: {}
}

#[kernel]
fn if_let(out: &mut [f32]) {
    if let a = 1 {}
}

#[kernel]
fn while_let(out: &mut [f32]) {
    while let a = 1 {}
}

#[kernel]
fn labelled_while(out: &mut [f32]) {
    'a: while true {}
}

#[kernel]
fn labelled_loop(out: &mut [f32]) {
    'a: loop {}
}

#[kernel]
fn labelled_for(out: &mut [f32]) {
    'a: for i in 0..2 {}
}

#[kernel]
fn break_label(out: &mut [f32]) {
    loop {
        break 'a;
    }
}

#[kernel]
fn break_value(out: &mut [f32]) {
    loop {
        break 1;
    }
}

#[kernel]
fn break_outside(out: &mut [f32]) {
    break;
}

#[kernel]
fn continue_label(out: &mut [f32]) {
    loop {
        continue 'a;
    }
}

#[kernel]
fn continue_outside(out: &mut [f32]) {
    continue;
}

#[kernel]
fn return_value(out: &mut [f32]) {
    return 1;
}

#[kernel]
fn does_nothing(out: &mut [f32]) {
    1 + 2;
}

#[kernel]
fn condition_not_bool(out: &mut [f32]) {
    if 1u32 {}
}

fn main() {}
