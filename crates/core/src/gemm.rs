//! How the operands of one (batched) matrix product lie in their buffers,
//! as the facade passes it to every backend's matmul: a row-major or
//! transposed matrix per batch, at an offset, a leading dimension and a
//! batch stride each. A view whose last two axes are swapped (`a.t()`) or
//! sliced along the batch is described here instead of being copied.

/// One input operand of a [`GemmShape`]: matrix `z`'s element `(i, j)` is
/// at `offset + z * batch_stride + i * ld + j` in its buffer, or, when
/// `transposed` (the matrix stored column by column: a view whose last two
/// axes are swapped), at `offset + z * batch_stride + i + j * ld`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GemmOperand {
    /// Elements before the first matrix's `(0, 0)`.
    pub offset: usize,
    /// Elements from one matrix to the next; 0 repeats one matrix for
    /// every batch (a 2-D operand broadcast over a 3-D one).
    pub batch_stride: usize,
    /// Elements from one row to the next (from one column to the next
    /// when `transposed`): at least the row's (column's) length.
    pub ld: usize,
    /// Stored column-major: the rows are the buffer's columns.
    pub transposed: bool,
}

impl GemmOperand {
    /// A dense row-major stack of `rows`×`cols` matrices from element 0.
    pub fn row_major(rows: usize, cols: usize) -> GemmOperand {
        GemmOperand {
            offset: 0,
            batch_stride: rows.saturating_mul(cols),
            ld: cols.max(1),
            transposed: false,
        }
    }

    /// The index of element `(i, j)` of matrix `z` (the caller keeps them
    /// inside the shape).
    pub fn index(&self, z: usize, i: usize, j: usize) -> usize {
        let (r, c) = if self.transposed { (j, i) } else { (i, j) };
        self.offset + z * self.batch_stride + r * self.ld + c
    }

    /// One past the farthest element that `batch` matrices of
    /// `rows`×`cols` reach (0 when they are empty); `None` past `usize`.
    pub fn reach(&self, batch: usize, rows: usize, cols: usize) -> Option<usize> {
        if batch == 0 || rows == 0 || cols == 0 {
            return Some(0);
        }
        let (r, c) = if self.transposed {
            (cols, rows)
        } else {
            (rows, cols)
        };
        (batch - 1)
            .checked_mul(self.batch_stride)?
            .checked_add((r - 1).checked_mul(self.ld)?)?
            .checked_add(c - 1)?
            .checked_add(self.offset)?
            .checked_add(1)
    }

    /// Whether the leading dimension leaves room for a whole row (column
    /// when transposed) of a `rows`×`cols` matrix, as BLAS requires.
    pub fn ld_fits(&self, rows: usize, cols: usize) -> bool {
        let line = if self.transposed { rows } else { cols };
        self.ld >= line.max(1)
    }
}

/// `c[z] = a[z] · b[z]` for `z < batch`, `a[z]` m×k, `b[z]` k×n, and `c`
/// the whole output buffer: `batch` dense row-major m×n matrices one after
/// another from element 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GemmShape {
    pub batch: usize,
    pub m: usize,
    pub k: usize,
    pub n: usize,
    pub a: GemmOperand,
    pub b: GemmOperand,
}

impl GemmShape {
    /// One product of dense row-major matrices (the 2-D matmul).
    pub fn plain((m, k, n): (usize, usize, usize)) -> GemmShape {
        GemmShape {
            batch: 1,
            m,
            k,
            n,
            a: GemmOperand::row_major(m, k),
            b: GemmOperand::row_major(k, n),
        }
    }

    /// Elements of `c`: batch × m × n (`None` past `usize`).
    pub fn c_len(&self) -> Option<usize> {
        self.batch.checked_mul(self.m)?.checked_mul(self.n)
    }

    /// Checks the shape against the buffers' lengths: each operand's
    /// farthest element inside its buffer, the leading dimensions at
    /// least a row, and `c` exactly `batch`×m×n. The message says which
    /// operand and the numbers.
    pub fn check(&self, a_len: usize, b_len: usize, c_len: usize) -> Result<(), String> {
        let (g, m, k, n) = (self.batch, self.m, self.k, self.n);
        for (name, op, rows, cols, len) in
            [("a", &self.a, m, k, a_len), ("b", &self.b, k, n, b_len)]
        {
            if !op.ld_fits(rows, cols) {
                return Err(format!(
                    "matmul {g}x{m}x{k}x{n}: {name}'s leading dimension {} is shorter than a {} of {}",
                    op.ld,
                    if op.transposed { "column" } else { "row" },
                    if op.transposed { rows } else { cols },
                ));
            }
            match op.reach(g, rows, cols) {
                Some(reach) if reach <= len => {}
                reach => {
                    return Err(format!(
                        "matmul {g}x{m}x{k}x{n}: {name} ({op:?}) reaches element {}, its buffer holds {len}",
                        reach.map_or("past usize::MAX".into(), |r| (r - 1).to_string()),
                    ));
                }
            }
        }
        match self.c_len() {
            Some(len) if len == c_len => Ok(()),
            len => Err(format!(
                "matmul {g}x{m}x{k}x{n}: c needs {} elements, its buffer holds {c_len}",
                len.map_or("more than usize::MAX".into(), |l| l.to_string())
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reach_and_index_agree() {
        let op = GemmOperand {
            offset: 3,
            batch_stride: 40,
            ld: 7,
            transposed: true,
        };
        // 2 batches of 4×5 stored column-major with 7 between columns.
        let last = op.index(1, 3, 4);
        assert_eq!(op.reach(2, 4, 5), Some(last + 1));
        assert_eq!(op.reach(0, 4, 5), Some(0));
        assert!(op.ld_fits(4, 5) && !op.ld_fits(8, 5));
    }

    #[test]
    fn check_names_the_operand() {
        let mut s = GemmShape::plain((2, 3, 4));
        assert_eq!(s.check(6, 12, 8), Ok(()));
        assert!(s.check(5, 12, 8).unwrap_err().contains("a ("));
        s.b.ld = 3;
        assert!(
            s.check(6, 12, 8)
                .unwrap_err()
                .contains("b's leading dimension 3")
        );
    }
}
