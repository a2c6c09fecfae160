//! What a case measures ([`Out`]) and what the report shows ([`Figure`]).

use serde::Serialize;

/// Which way a figure improves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Better {
    /// Times: less is better.
    Lower,
    /// Rates (GB/s, TFLOP/s), speed-ups: more is better.
    Higher,
}

/// One of our measurements, before its anchors are attached.
#[derive(Debug, Clone, PartialEq)]
pub struct Measure {
    /// The `key value` line's key, e.g. `unigpu_cpu_relu_4Mi_ms`; also what
    /// [`super::anchors::ANCHORS`] maps to an anchor.
    pub key: String,
    /// What the table calls it, e.g. "relu 4 Mi f32".
    pub name: String,
    pub group: &'static str,
    pub unit: &'static str,
    pub value: f64,
    pub better: Better,
}

/// An anchor figure beside one of ours.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Anchor {
    /// Its key in the anchor scripts' `key value` lines.
    pub key: String,
    /// What the table calls it, e.g. "numpy" or "raw cuLaunchKernel (floor.cu)".
    pub label: String,
    /// `None`: this anchor was not measured in this run.
    pub value: Option<f64>,
}

/// One row of the report: our figure beside (at most) one anchor. A figure
/// with several anchors (launch: raw driver, raw runtime, CuPy, torch) is
/// one row per anchor.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Figure {
    pub key: String,
    pub name: String,
    pub group: String,
    pub unit: String,
    pub value: f64,
    pub better: Better,
    pub anchor: Option<Anchor>,
}

impl Figure {
    /// How many times better than the anchor we are: above 1 is better
    /// for every figure (anchor/ours for times, ours/anchor for rates).
    /// `None` without an anchor value or for a non-positive figure.
    pub fn ratio(&self) -> Option<f64> {
        let anchor = self.anchor.as_ref()?.value?;
        if !(self.value > 0.0 && anchor > 0.0) {
            return None;
        }
        Some(match self.better {
            Better::Lower => anchor / self.value,
            Better::Higher => self.value / anchor,
        })
    }
}

/// Where a case puts what it measured.
#[derive(Debug, Default)]
pub struct Out {
    /// The running case's group (set by the runner).
    pub group: &'static str,
    pub measures: Vec<Measure>,
    /// Values that are not figures (sizes, the compile's origin), `key value`.
    pub info: Vec<(String, String)>,
    /// Every `key value` line in the order it was measured (`--lines`).
    pub lines: Vec<(String, String)>,
}

impl Out {
    /// A figure: `key` for the `key value` line, `name` for the table.
    pub fn figure(
        &mut self,
        key: impl Into<String>,
        name: impl Into<String>,
        unit: &'static str,
        better: Better,
        value: f64,
    ) {
        let key = key.into();
        self.lines.push((key.clone(), format_value(value)));
        self.measures.push(Measure {
            key,
            name: name.into(),
            group: self.group,
            unit,
            value,
            better,
        });
    }

    /// A `key value` line that is not a figure (e.g. an array size).
    pub fn info(&mut self, key: impl Into<String>, value: impl std::fmt::Display) {
        let (key, value) = (key.into(), value.to_string());
        self.lines.push((key.clone(), value.clone()));
        self.info.push((key, value));
    }
}

/// A figure's value for the table and the `key value` lines: one decimal
/// from 100, three from 1, else four significant digits.
pub fn format_value(v: f64) -> String {
    if !v.is_finite() {
        return v.to_string();
    }
    let a = v.abs();
    if a >= 100.0 {
        format!("{v:.1}")
    } else if a >= 1.0 || a == 0.0 {
        format!("{v:.3}")
    } else {
        let decimals = (3 - a.log10().floor() as i32).max(0) as usize;
        format!("{v:.decimals$}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fig(value: f64, better: Better, anchor: Option<f64>) -> Figure {
        Figure {
            key: "k".into(),
            name: "n".into(),
            group: "g".into(),
            unit: "ms".into(),
            value,
            better,
            anchor: Some(Anchor {
                key: "a".into(),
                label: "anchor".into(),
                value: anchor,
            }),
        }
    }

    #[test]
    fn above_one_is_better_for_times_and_for_rates() {
        // Half the anchor's time: twice as good.
        assert_eq!(fig(1.0, Better::Lower, Some(2.0)).ratio(), Some(2.0));
        // Twice the anchor's time: half as good.
        assert_eq!(fig(4.0, Better::Lower, Some(2.0)).ratio(), Some(0.5));
        // Twice the anchor's rate: twice as good.
        assert_eq!(fig(200.0, Better::Higher, Some(100.0)).ratio(), Some(2.0));
        assert_eq!(fig(50.0, Better::Higher, Some(100.0)).ratio(), Some(0.5));
    }

    #[test]
    fn no_ratio_without_an_anchor_value_or_for_zero() {
        assert_eq!(fig(1.0, Better::Lower, None).ratio(), None);
        assert_eq!(fig(0.0, Better::Lower, Some(1.0)).ratio(), None);
        assert_eq!(fig(1.0, Better::Higher, Some(0.0)).ratio(), None);
        let mut f = fig(1.0, Better::Lower, Some(1.0));
        f.anchor = None;
        assert_eq!(f.ratio(), None);
    }

    #[test]
    fn values_keep_four_significant_digits_below_one() {
        assert_eq!(format_value(4254.27), "4254.3");
        assert_eq!(format_value(3.23612), "3.236");
        assert_eq!(format_value(0.684), "0.6840");
        assert_eq!(format_value(0.00055123), "0.0005512");
        assert_eq!(format_value(0.0), "0.000");
    }
}
