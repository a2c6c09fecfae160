//! Where an array's elements sit in its buffer: a shape, a stride per axis
//! (in elements, possibly negative or zero) and the first element's offset.
//!
//! One type for every front end (Rust, C, Python) and every backend, so a
//! view means the same thing everywhere: `reshape`, `permute`, `slice`,
//! `index` and `broadcast_to` make a new `Layout` over the same buffer and
//! never move an element. An array made by unigpu is row-major (C order,
//! the last axis varies fastest); views and DLPack imports may be strided.

use std::fmt;

use smallvec::SmallVec;
use std::ops::Range;

/// Why a shape operation was refused: the message names the shapes (and
/// the axis) involved, as numpy's and torch's do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ShapeError(pub String);

fn err<T>(message: impl Into<String>) -> Result<T, ShapeError> {
    Err(ShapeError(message.into()))
}

/// Shape, strides and offset of an array's elements in its buffer.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Layout {
    shape: Dims<usize>,
    strides: Dims<isize>,
    offset: usize,
}

/// Per-axis values, inline up to 4 axes: most arrays are made and dropped
/// without allocating for their layout.
type Dims<T> = SmallVec<[T; 4]>;

impl fmt::Debug for Layout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Layout(shape {:?}, strides {:?}, offset {})",
            self.shape, self.strides, self.offset
        )
    }
}

/// The row-major strides of `shape`.
pub fn row_major_strides(shape: &[usize]) -> Vec<isize> {
    strides_of(shape).to_vec()
}

#[inline]
fn strides_of(shape: &[usize]) -> Dims<isize> {
    let mut strides: Dims<isize> = SmallVec::from_elem(0, shape.len());
    let mut step: isize = 1;
    for (s, &d) in strides.iter_mut().zip(shape).rev() {
        *s = step;
        step = step.saturating_mul(d.max(1) as isize);
    }
    strides
}

/// The number of elements of `shape` (1 for a 0-d shape), or an error when
/// it overflows.
#[inline]
pub fn element_count(shape: &[usize]) -> Result<usize, ShapeError> {
    shape.iter().try_fold(1usize, |n, &d| {
        n.checked_mul(d)
            .ok_or_else(|| ShapeError(format!("shape {shape:?}: the element count overflows")))
    })
}

/// The shape two operands broadcast to, numpy's rules: axes are matched
/// from the last; two extents match when equal or when one is 1.
pub fn broadcast_shapes(a: &[usize], b: &[usize]) -> Result<Vec<usize>, ShapeError> {
    let n = a.len().max(b.len());
    let at = |s: &[usize], i: usize| {
        if i + s.len() < n {
            1
        } else {
            s[i + s.len() - n]
        }
    };
    (0..n)
        .map(|i| match (at(a, i), at(b, i)) {
            (x, y) if x == y => Ok(x),
            (1, y) => Ok(y),
            (x, 1) => Ok(x),
            _ => err(format!(
                "shapes {a:?} and {b:?} do not broadcast (axis {i} of the result: {} against {})",
                at(a, i),
                at(b, i)
            )),
        })
        .collect()
}

/// `shape` with at most one `-1` replaced by the extent that makes the
/// element count `len` (numpy's and torch's `reshape(-1, ...)`).
pub fn infer_shape(shape: &[isize], len: usize) -> Result<Vec<usize>, ShapeError> {
    let mut unknown = None;
    let mut known = 1usize;
    for (i, &d) in shape.iter().enumerate() {
        match d {
            -1 if unknown.is_some() => {
                return err(format!("shape {shape:?}: only one -1 is allowed"));
            }
            -1 => unknown = Some(i),
            d if d < 0 => return err(format!("shape {shape:?}: negative extent {d}")),
            d => {
                known = known.checked_mul(d as usize).ok_or_else(|| {
                    ShapeError(format!("shape {shape:?}: the element count overflows"))
                })?
            }
        }
    }
    let mut out: Vec<usize> = shape.iter().map(|&d| d.max(0) as usize).collect();
    if let Some(i) = unknown {
        if known == 0 || !len.is_multiple_of(known) {
            return err(format!(
                "cannot reshape {len} elements to {shape:?}: {len} is not a multiple of {known}"
            ));
        }
        out[i] = len / known;
    }
    Ok(out)
}

fn axis_of(axis: usize, ndim: usize) -> Result<usize, ShapeError> {
    if axis < ndim {
        Ok(axis)
    } else {
        err(format!(
            "axis {axis} is out of range for an array of {ndim} dimensions"
        ))
    }
}

/// What a creation call takes as a shape: a length (`ctx.zeros::<f32>(n)`,
/// a 1-D array as before shapes), an array or slice of extents
/// (`ctx.zeros::<f32>([2, 3])`), or a `Vec`.
pub trait IntoShape {
    fn into_shape(self) -> Shape;
}

/// A shape as [`IntoShape`] gives it: inline up to 4 axes, so that
/// `ctx.alloc::<f32>(n)` allocates nothing on the heap for it.
pub type Shape = SmallVec<[usize; 4]>;

impl IntoShape for usize {
    fn into_shape(self) -> Shape {
        smallvec::smallvec![self]
    }
}

impl<const N: usize> IntoShape for [usize; N] {
    fn into_shape(self) -> Shape {
        SmallVec::from_slice(&self)
    }
}

impl IntoShape for &[usize] {
    fn into_shape(self) -> Shape {
        SmallVec::from_slice(self)
    }
}

impl<const N: usize> IntoShape for &[usize; N] {
    fn into_shape(self) -> Shape {
        SmallVec::from_slice(self)
    }
}

impl IntoShape for Vec<usize> {
    fn into_shape(self) -> Shape {
        SmallVec::from_vec(self)
    }
}

impl IntoShape for &Vec<usize> {
    fn into_shape(self) -> Shape {
        SmallVec::from_slice(self)
    }
}

impl IntoShape for Shape {
    fn into_shape(self) -> Shape {
        self
    }
}

impl Layout {
    /// A row-major layout of `shape` from element 0.
    #[inline]
    pub fn contiguous(shape: &[usize]) -> Layout {
        Layout {
            shape: SmallVec::from_slice(shape),
            strides: strides_of(shape),
            offset: 0,
        }
    }

    /// A layout from its parts, checked: as many strides as axes, and
    /// every element's offset a non-negative `isize`.
    pub fn from_parts(
        shape: &[usize],
        strides: &[isize],
        offset: usize,
    ) -> Result<Layout, ShapeError> {
        if shape.len() != strides.len() {
            return err(format!(
                "shape {shape:?} has {} axes but strides {strides:?} has {}",
                shape.len(),
                strides.len()
            ));
        }
        element_count(shape)?;
        let layout = Layout {
            shape: SmallVec::from_slice(shape),
            strides: SmallVec::from_slice(strides),
            offset,
        };
        layout.extent()?;
        Ok(layout)
    }

    pub fn shape(&self) -> &[usize] {
        &self.shape
    }

    /// Strides in elements, one per axis.
    pub fn strides(&self) -> &[isize] {
        &self.strides
    }

    /// The first element's offset in the buffer, in elements.
    pub fn offset(&self) -> usize {
        self.offset
    }

    pub fn ndim(&self) -> usize {
        self.shape.len()
    }

    /// The number of elements (1 for a 0-d array).
    pub fn len(&self) -> usize {
        self.shape.iter().product()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Row-major and dense (an axis of extent 1 may have any stride), from
    /// any offset: the elements are one run of the buffer, in order.
    pub fn is_contiguous(&self) -> bool {
        let mut expected: isize = 1;
        for (&d, &s) in self.shape.iter().zip(&self.strides).rev() {
            if d != 1 && s != expected {
                return self.is_empty();
            }
            expected = expected.saturating_mul(d as isize);
        }
        true
    }

    /// Contiguous, from element 0, and every element of a buffer of
    /// `buffer_len`: what an op on whole buffers can take as it is.
    pub fn is_whole(&self, buffer_len: usize) -> bool {
        self.offset == 0 && self.len() == buffer_len && self.is_contiguous()
    }

    /// The lowest element offset and one past the highest (`(offset,
    /// offset)` when there is no element), or an error when an offset is
    /// negative or overflows.
    pub fn extent(&self) -> Result<(usize, usize), ShapeError> {
        if self.is_empty() {
            return Ok((self.offset, self.offset));
        }
        let (mut lo, mut hi) = (self.offset as i128, self.offset as i128);
        for (&d, &s) in self.shape.iter().zip(&self.strides) {
            let reach = (d as i128 - 1) * s as i128;
            if reach < 0 {
                lo += reach;
            } else {
                hi += reach;
            }
        }
        if lo < 0 || hi >= isize::MAX as i128 {
            return err(format!(
                "{self:?} reaches element {} of its buffer",
                if lo < 0 { lo } else { hi }
            ));
        }
        Ok((lo as usize, hi as usize + 1))
    }

    /// Whether two elements may share a place in the buffer (a stride of
    /// 0, as broadcasting makes, or strides that interleave): such a
    /// layout can be read, never written. Sufficient, not exact: axes
    /// sorted by stride must each step past everything the smaller ones
    /// reach, as every layout made by reshape, permute and slice does.
    pub fn may_overlap(&self) -> bool {
        let mut axes: Vec<(usize, usize)> = self
            .shape
            .iter()
            .zip(&self.strides)
            .filter(|(d, _)| **d > 1)
            .map(|(&d, &s)| (s.unsigned_abs(), d))
            .collect();
        axes.sort_unstable();
        let mut reach = 0usize;
        for (stride, extent) in axes {
            if stride <= reach {
                return true;
            }
            reach = reach.saturating_add(stride.saturating_mul(extent - 1));
        }
        false
    }

    /// Checks that every element lies in a buffer of `buffer_len`.
    pub fn check_within(&self, buffer_len: usize) -> Result<(), ShapeError> {
        let (_, end) = self.extent()?;
        if end > buffer_len {
            return err(format!(
                "{self:?} reaches element {} of a buffer of {buffer_len}",
                end - 1
            ));
        }
        Ok(())
    }

    /// The same elements with shape `shape`, without moving any: refused,
    /// naming both shapes, when the element counts differ or when the
    /// strides cannot express it (a transposed array flattened); copy to a
    /// contiguous array first then.
    pub fn reshape(&self, shape: &[usize]) -> Result<Layout, ShapeError> {
        let len = element_count(shape)?;
        if len != self.len() {
            return err(format!(
                "cannot reshape an array of shape {:?} ({} elements) to {shape:?} ({len} elements)",
                self.shape,
                self.len()
            ));
        }
        if len == 0 || self.is_contiguous() {
            return Ok(Layout {
                shape: SmallVec::from_slice(shape),
                strides: strides_of(shape),
                offset: self.offset,
            });
        }
        match nocopy_strides(&self.shape, &self.strides, shape) {
            Some(strides) => Ok(Layout {
                shape: SmallVec::from_slice(shape),
                strides: strides.into(),
                offset: self.offset,
            }),
            None => err(format!(
                "cannot reshape an array of shape {:?} with strides {:?} to {shape:?} without a copy; \
                 make it contiguous first",
                self.shape, self.strides
            )),
        }
    }

    /// The axes reordered: axis `i` of the result is axis `axes[i]` of
    /// this one.
    pub fn permute(&self, axes: &[usize]) -> Result<Layout, ShapeError> {
        let n = self.ndim();
        let mut seen = vec![false; n];
        if axes.len() != n
            || axes
                .iter()
                .any(|&a| a >= n || std::mem::replace(&mut seen[a], true))
        {
            return err(format!(
                "axes {axes:?} are not a permutation of the {n} axes of shape {:?}",
                self.shape
            ));
        }
        Ok(Layout {
            shape: axes.iter().map(|&a| self.shape[a]).collect(),
            strides: axes.iter().map(|&a| self.strides[a]).collect(),
            offset: self.offset,
        })
    }

    /// Every axis reversed (numpy's `.T`): a matrix transposed.
    pub fn transpose(&self) -> Layout {
        Layout {
            shape: self.shape.iter().rev().copied().collect(),
            strides: self.strides.iter().rev().copied().collect(),
            offset: self.offset,
        }
    }

    /// Axes `a` and `b` swapped.
    pub fn swap_axes(&self, a: usize, b: usize) -> Result<Layout, ShapeError> {
        let (a, b) = (axis_of(a, self.ndim())?, axis_of(b, self.ndim())?);
        let mut out = self.clone();
        out.shape.swap(a, b);
        out.strides.swap(a, b);
        Ok(out)
    }

    /// Elements `range` of `axis`, every `|step|`-th of them: from
    /// `range.start` upwards when `step > 0`, from `range.end - 1`
    /// downwards when `step < 0` (ndarray's rule; Python's `a[7:2:-2]` is
    /// `range` 3..8, step -2). The axis is kept. Bounds are checked, not
    /// clamped (the Python front end clamps as Python's slices do).
    pub fn slice(
        &self,
        axis: usize,
        range: Range<usize>,
        step: isize,
    ) -> Result<Layout, ShapeError> {
        let axis = axis_of(axis, self.ndim())?;
        let d = self.shape[axis];
        if step == 0 {
            return err("a slice step cannot be 0");
        }
        if range.start > range.end || range.end > d {
            return err(format!(
                "slice {}..{} is out of range for axis {axis} of extent {d}",
                range.start, range.end
            ));
        }
        let count = range.len().div_ceil(step.unsigned_abs());
        let mut out = self.clone();
        out.shape[axis] = count;
        if count > 0 {
            let first = if step > 0 { range.start } else { range.end - 1 };
            let at = self.offset as isize + first as isize * self.strides[axis];
            out.offset = usize::try_from(at)
                .map_err(|_| ShapeError(format!("{self:?}: slice start underflows")))?;
        }
        out.strides[axis] = self.strides[axis] * step;
        Ok(out)
    }

    /// Element `index` of `axis`, the axis removed (`a[i]` in numpy).
    pub fn index(&self, axis: usize, index: usize) -> Result<Layout, ShapeError> {
        let axis = axis_of(axis, self.ndim())?;
        let d = self.shape[axis];
        if index >= d {
            return err(format!(
                "index {index} is out of range for axis {axis} of extent {d}"
            ));
        }
        let first = self.offset as isize + index as isize * self.strides[axis];
        let mut out = self.clone();
        out.shape.remove(axis);
        out.strides.remove(axis);
        out.offset = usize::try_from(first)
            .map_err(|_| ShapeError(format!("{self:?}: index underflows")))?;
        Ok(out)
    }

    /// The layout seen with shape `shape` by numpy's broadcasting rules:
    /// new leading axes and extent-1 axes repeat (stride 0). Refused when
    /// an axis of extent other than 1 differs.
    pub fn broadcast_to(&self, shape: &[usize]) -> Result<Layout, ShapeError> {
        if shape.len() < self.ndim() {
            return err(format!(
                "cannot broadcast shape {:?} to {shape:?}: fewer axes",
                self.shape
            ));
        }
        let lead = shape.len() - self.ndim();
        let mut strides = vec![0isize; shape.len()];
        for (i, (&d, &s)) in self.shape.iter().zip(&self.strides).enumerate() {
            let want = shape[lead + i];
            if d == want {
                strides[lead + i] = s;
            } else if d != 1 {
                return err(format!(
                    "cannot broadcast shape {:?} to {shape:?} (axis {i}: {d} against {want})",
                    self.shape
                ));
            }
        }
        Ok(Layout {
            shape: SmallVec::from_slice(shape),
            strides: strides.into(),
            offset: self.offset,
        })
    }

    /// Each element's offset in the buffer, in row-major order of the
    /// shape: what a host copy gathers.
    pub fn offsets(&self) -> impl Iterator<Item = usize> + '_ {
        let n = self.len();
        let mut index = vec![0usize; self.ndim()];
        let mut at = self.offset as isize;
        (0..n).map(move |k| {
            if k > 0 {
                // Advance the last axis, carrying into earlier ones; an
                // axis that wraps steps back by what it walked, never past
                // the layout's own extent (a larger step could overflow).
                for axis in (0..index.len()).rev() {
                    if index[axis] + 1 < self.shape[axis] {
                        index[axis] += 1;
                        at += self.strides[axis];
                        break;
                    }
                    at -= self.strides[axis] * (self.shape[axis] as isize - 1);
                    index[axis] = 0;
                }
            }
            at as usize
        })
    }
}

/// Strides giving `new` over the elements that `(old, strides)` describes
/// in row-major order, where they exist (numpy's no-copy reshape): the
/// axes are split into groups whose extents have equal products, and each
/// old group must be one run of equally spaced elements.
fn nocopy_strides(old: &[usize], strides: &[isize], new: &[usize]) -> Option<Vec<isize>> {
    // Extent-1 axes carry no stride information: drop them.
    let (od, os): (Vec<usize>, Vec<isize>) = old
        .iter()
        .zip(strides)
        .filter(|(d, _)| **d != 1)
        .map(|(&d, &s)| (d, s))
        .unzip();
    let mut out = vec![0isize; new.len()];
    let (mut oi, mut ni) = (0usize, 0usize);
    while ni < new.len() {
        if new[ni] == 1 {
            out[ni] = 1;
            ni += 1;
            continue;
        }
        if oi >= od.len() {
            return None;
        }
        let (o_start, n_start) = (oi, ni);
        let (mut op, mut np) = (od[oi], new[ni]);
        oi += 1;
        ni += 1;
        while op != np {
            if op < np {
                op *= *od.get(oi)?;
                oi += 1;
            } else {
                while ni < new.len() && new[ni] == 1 {
                    ni += 1;
                }
                np *= *new.get(ni)?;
                ni += 1;
            }
        }
        // The old group must be one evenly spaced run.
        for k in o_start..oi - 1 {
            if os[k] != os[k + 1] * od[k + 1] as isize {
                return None;
            }
        }
        // New strides: the group's last stride, growing leftwards.
        let mut s = os[oi - 1];
        for k in (n_start..ni).rev() {
            out[k] = s;
            s *= new[k] as isize;
        }
    }
    if oi != od.len() {
        return None;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Row-major offsets of `shape`'s elements, computed the long way.
    fn brute(l: &Layout) -> Vec<usize> {
        let n = l.len();
        (0..n)
            .map(|mut k| {
                let mut at = l.offset() as isize;
                for axis in (0..l.ndim()).rev() {
                    let d = l.shape()[axis];
                    at += (k % d) as isize * l.strides()[axis];
                    k /= d;
                }
                at as usize
            })
            .collect()
    }

    #[test]
    fn offsets_walk_row_major_order() {
        let l = Layout::contiguous(&[2, 3, 4]);
        assert_eq!(l.offsets().collect::<Vec<_>>(), (0..24).collect::<Vec<_>>());
        let t = l.transpose();
        assert_eq!(t.shape(), &[4, 3, 2]);
        assert_eq!(t.offsets().collect::<Vec<_>>(), brute(&t));
        let s = l.slice(2, 1..4, -2).unwrap();
        assert_eq!(s.shape(), &[2, 3, 2]);
        assert_eq!(s.offsets().take(4).collect::<Vec<_>>(), vec![3, 1, 7, 5]);
        assert_eq!(s.offsets().collect::<Vec<_>>(), brute(&s));
    }

    #[test]
    fn reshape_keeps_elements_in_order_or_refuses() {
        let l = Layout::contiguous(&[4, 6]);
        let r = l.reshape(&[2, 2, 3, 2]).unwrap();
        assert_eq!(r.offsets().collect::<Vec<_>>(), (0..24).collect::<Vec<_>>());
        // A transposed matrix cannot be flattened without a copy...
        let t = l.transpose();
        let e = t.reshape(&[24]).unwrap_err();
        assert!(e.0.contains("[6, 4]") && e.0.contains("[24]"), "{e}");
        // ...but its axes can be split.
        let split = t.reshape(&[3, 2, 4]).unwrap();
        assert_eq!(split.offsets().collect::<Vec<_>>(), brute(&t).to_vec());
        // A column slice of rows: rows merge only where spacing allows.
        let cols = l.slice(1, 0..3, 1).unwrap();
        assert!(cols.reshape(&[12]).is_err());
        assert_eq!(
            cols.reshape(&[2, 2, 3])
                .unwrap()
                .offsets()
                .collect::<Vec<_>>(),
            brute(&cols)
        );
        let e = l.reshape(&[5, 5]).unwrap_err();
        assert!(e.0.contains("[4, 6]") && e.0.contains("[5, 5]"), "{e}");
    }

    #[test]
    fn random_view_chains_agree_with_the_long_way() {
        use rand::{Rng, SeedableRng, rngs::StdRng};
        let mut rng = StdRng::seed_from_u64(7);
        for _ in 0..2000 {
            let ndim = rng.random_range(1..5);
            let shape: Vec<usize> = (0..ndim).map(|_| rng.random_range(1..6)).collect();
            let mut l = Layout::contiguous(&shape);
            // The buffer the original addresses, as values = offsets.
            for _ in 0..4 {
                let before = brute(&l);
                let n = l.ndim();
                match rng.random_range(0..5) {
                    0 if n > 0 => {
                        let axis = rng.random_range(0..n);
                        let d = l.shape()[axis];
                        let (a, b) = (rng.random_range(0..=d), rng.random_range(0..=d));
                        let step = rng.random_range(1..3) as isize;
                        let step = if rng.random() { step } else { -step };
                        let s = l.slice(axis, a.min(b)..a.max(b), step).unwrap();
                        let want: Vec<usize> = brute(&s);
                        assert_eq!(s.offsets().collect::<Vec<_>>(), want);
                        l = s;
                    }
                    1 => {
                        let mut axes: Vec<usize> = (0..n).collect();
                        for i in (1..n).rev() {
                            axes.swap(i, rng.random_range(0..=i));
                        }
                        l = l.permute(&axes).unwrap();
                    }
                    2 if !l.is_empty() => {
                        // Any factorisation of the count.
                        let mut left = l.len();
                        let mut s = vec![];
                        while left > 1 && s.len() < 4 {
                            let divs: Vec<usize> =
                                (1..=left).filter(|d| left.is_multiple_of(*d)).collect();
                            let d = divs[rng.random_range(0..divs.len())];
                            s.push(d);
                            left /= d;
                        }
                        s.push(left);
                        if let Ok(r) = l.reshape(&s) {
                            // Same elements, same order.
                            assert_eq!(brute(&r), before, "{l:?} -> {s:?}");
                            l = r;
                        } else {
                            assert!(!l.is_contiguous());
                        }
                    }
                    3 if n > 0 => {
                        let axis = rng.random_range(0..n);
                        let i = rng.random_range(0..l.shape()[axis].max(1));
                        if let Ok(x) = l.index(axis, i) {
                            l = x;
                        }
                    }
                    _ => {}
                }
                assert_eq!(l.offsets().collect::<Vec<_>>(), brute(&l));
                let (lo, hi) = l.extent().unwrap();
                assert!(brute(&l).iter().all(|&o| o >= lo && o < hi));
            }
        }
    }

    #[test]
    fn broadcasting_follows_numpy() {
        assert_eq!(broadcast_shapes(&[3, 1], &[4]).unwrap(), vec![3, 4]);
        assert_eq!(broadcast_shapes(&[], &[2, 2]).unwrap(), vec![2, 2]);
        let e = broadcast_shapes(&[3, 2], &[3]).unwrap_err();
        assert!(e.0.contains("[3, 2]") && e.0.contains("[3]"), "{e}");
        let b = Layout::contiguous(&[3, 1])
            .broadcast_to(&[2, 3, 4])
            .unwrap();
        assert_eq!(b.strides(), &[0, 1, 0]);
        assert_eq!(b.offsets().collect::<Vec<_>>(), brute(&b));
        assert!(Layout::contiguous(&[3]).broadcast_to(&[3, 2]).is_err());
    }

    #[test]
    fn bad_input_is_an_error() {
        let l = Layout::contiguous(&[2, 3]);
        assert!(l.slice(2, 0..1, 1).is_err());
        assert!(l.slice(1, 0..4, 1).is_err());
        assert!(l.slice(1, 0..1, 0).is_err());
        assert!(l.index(0, 2).is_err());
        assert!(l.permute(&[0, 0]).is_err());
        assert!(l.permute(&[1]).is_err());
        assert_eq!(infer_shape(&[-1, 3], 6).unwrap(), vec![2, 3]);
        assert!(infer_shape(&[-1, -1], 6).is_err());
        assert!(infer_shape(&[-1, 4], 6).is_err());
        assert!(Layout::from_parts(&[2, 2], &[-1, 1], 0).is_err());
        assert!(
            Layout::from_parts(&[2, 2], &[2, 1], 0)
                .unwrap()
                .check_within(3)
                .is_err()
        );
        assert!(element_count(&[usize::MAX, 2]).is_err());
    }

    #[test]
    fn overlap_is_found_and_views_never_overlap() {
        assert!(
            Layout::contiguous(&[3])
                .broadcast_to(&[2, 3])
                .unwrap()
                .may_overlap()
        );
        assert!(
            Layout::from_parts(&[2, 3], &[1, 1], 0)
                .unwrap()
                .may_overlap()
        );
        let l = Layout::contiguous(&[4, 5, 6]);
        assert!(!l.may_overlap());
        assert!(!l.permute(&[2, 0, 1]).unwrap().may_overlap());
        assert!(!l.slice(2, 1..6, -2).unwrap().may_overlap());
        assert!(!l.index(1, 3).unwrap().may_overlap());
    }
}
