//! The report's outputs: a markdown table, JSON, an SVG bar chart of the
//! ratios, and the `key value` lines of the old `unigpu bench`.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use plotters::coord::ranged1d::{IntoSegmentedCoord, SegmentValue};
use plotters::prelude::*;
use serde::Serialize;

use super::figure::{Figure, format_value};

/// How the ratio column reads, for the table and the JSON.
pub const RATIO_MEANING: &str = "how many times better unigpu is than the anchor: \
     anchor/ours for times, ours/anchor for rates; above 1 is better";

/// A case that did not run on this backend, and why.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Skipped {
    pub case: String,
    pub group: String,
    pub reason: String,
}

/// Everything one `unigpu bench` run measured.
#[derive(Debug, Clone, PartialEq)]
pub struct Report {
    /// `YYYY-MM-DD`, UTC.
    pub date: String,
    pub backend: String,
    pub device: String,
    /// Where the anchor values came from (or why they are missing).
    pub anchor_sources: Vec<String>,
    pub figures: Vec<Figure>,
    pub skipped: Vec<Skipped>,
    /// `key value` lines that are not figures.
    pub info: Vec<(String, String)>,
    /// Every `key value` line of the cases, in order.
    pub lines: Vec<(String, String)>,
}

#[derive(Serialize)]
struct JsonFigure<'a> {
    #[serde(flatten)]
    figure: &'a Figure,
    ratio: Option<f64>,
}

#[derive(Serialize)]
struct JsonReport<'a> {
    date: &'a str,
    backend: &'a str,
    device: &'a str,
    ratio_meaning: &'a str,
    anchor_sources: &'a [String],
    figures: Vec<JsonFigure<'a>>,
    skipped: &'a [Skipped],
    info: BTreeMap<&'a str, &'a str>,
}

impl Report {
    /// A heading with the date, backend and device, the anchors' sources,
    /// and one table row per figure (and per skipped case).
    pub fn markdown(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "## unigpu bench, {}: {} backend, {}\n",
            self.date, self.backend, self.device
        );
        if self.anchor_sources.is_empty() {
            s.push_str("Anchors: none given (`--anchors FILE`, `--numpy`).\n\n");
        } else {
            s.push_str("Anchors:\n\n");
            for src in &self.anchor_sources {
                let _ = writeln!(s, "- {src}");
            }
            s.push('\n');
        }
        let _ = writeln!(s, "Ratio: {RATIO_MEANING}.\n");
        s.push_str("| group | figure | unigpu | anchor | anchor value | ratio |\n");
        s.push_str("|---|---|---|---|---|---|\n");
        for f in &self.figures {
            let (label, value) = match &f.anchor {
                None => ("—".to_string(), "—".to_string()),
                Some(a) => (
                    a.label.clone(),
                    a.value.map_or("not measured".into(), format_value),
                ),
            };
            let ratio = f.ratio().map_or("—".into(), |r| format!("{r:.2}×"));
            let _ = writeln!(
                s,
                "| {} | {} ({}) | {} | {label} | {value} | {ratio} |",
                f.group,
                f.name,
                f.unit,
                format_value(f.value)
            );
        }
        for k in &self.skipped {
            let _ = writeln!(
                s,
                "| {} | {} (case) | skipped: {} | — | — | — |",
                k.group, k.case, k.reason
            );
        }
        s
    }

    /// Every figure with its anchor and ratio, the skipped cases and the
    /// info lines, pretty-printed.
    pub fn json(&self) -> anyhow::Result<String> {
        let report = JsonReport {
            date: &self.date,
            backend: &self.backend,
            device: &self.device,
            ratio_meaning: RATIO_MEANING,
            anchor_sources: &self.anchor_sources,
            figures: self
                .figures
                .iter()
                .map(|figure| JsonFigure {
                    figure,
                    ratio: figure.ratio(),
                })
                .collect(),
            skipped: &self.skipped,
            info: self
                .info
                .iter()
                .map(|(k, v)| (k.as_str(), v.as_str()))
                .collect(),
        };
        Ok(serde_json::to_string_pretty(&report)?)
    }

    /// The old output: `unigpu_backend`, `unigpu_device`, then one `key
    /// value` line per measurement; skipped cases as `#` comments.
    pub fn lines(&self) -> String {
        let mut s = format!(
            "unigpu_backend {}\nunigpu_device {}\n",
            self.backend,
            self.device.replace(' ', "_")
        );
        for (k, v) in &self.lines {
            let _ = writeln!(s, "{k} {v}");
        }
        for k in &self.skipped {
            let _ = writeln!(s, "# skipped case {}: {}", k.case, k.reason);
        }
        s
    }

    /// Each figure's ratio to its anchor as a horizontal bar, with a
    /// vertical line at 1.0 (SVG; plotters writes text as `<text>`, so no
    /// font is needed).
    pub fn plot(&self, path: &Path) -> anyhow::Result<()> {
        let bars: Vec<(String, f64)> = self
            .figures
            .iter()
            .filter_map(|f| {
                let label = f.anchor.as_ref()?.label.as_str();
                Some((format!("{} ({}) vs {label}", f.name, f.unit), f.ratio()?))
            })
            .collect();
        let label_w = bars.iter().map(|(l, _)| l.len()).max().unwrap_or(20) as u32 * 7 + 20;
        let height = 110 + 26 * bars.len().max(1) as u32;
        let root = SVGBackend::new(path, (label_w + 520, height)).into_drawing_area();
        root.fill(&WHITE)?;
        let title = format!(
            "unigpu bench {}: {} backend, {}",
            self.date, self.backend, self.device
        );
        if bars.is_empty() {
            root.draw(&Text::new(title, (10, 10), ("sans-serif", 18)))?;
            root.draw(&Text::new(
                "no figure has an anchor value in this run",
                (10, 50),
                ("sans-serif", 14),
            ))?;
            root.present()?;
            return Ok(());
        }
        let n = bars.len();
        let x_max = bars.iter().map(|b| b.1).fold(1.0, f64::max) * 1.15;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(label_w)
            .build_cartesian_2d(0.0..x_max, (0..n).into_segmented())?;
        // Row 0 at the top: the table's order.
        let row = |i: usize| n - 1 - i;
        let labels: Vec<&str> = bars.iter().map(|b| b.0.as_str()).collect();
        chart
            .configure_mesh()
            .disable_y_mesh()
            .y_labels(n)
            .y_label_formatter(&|v| match v {
                SegmentValue::CenterOf(i) if *i < n => labels[row(*i)].to_string(),
                _ => String::new(),
            })
            .x_desc("ratio to the anchor (above 1: unigpu is better)")
            .draw()?;
        chart.draw_series(bars.iter().enumerate().map(|(i, (_, r))| {
            let color = if *r >= 1.0 {
                GREEN.mix(0.6)
            } else {
                RED.mix(0.6)
            };
            let mut bar = Rectangle::new(
                [
                    (0.0, SegmentValue::Exact(row(i))),
                    (*r, SegmentValue::Exact(row(i) + 1)),
                ],
                color.filled(),
            );
            bar.set_margin(4, 4, 0, 0);
            bar
        }))?;
        chart.draw_series(bars.iter().enumerate().map(|(i, (_, r))| {
            Text::new(
                format!(" {r:.2}×"),
                (*r, SegmentValue::CenterOf(row(i))),
                ("sans-serif", 12),
            )
        }))?;
        chart.draw_series(std::iter::once(PathElement::new(
            vec![(1.0, SegmentValue::Exact(0)), (1.0, SegmentValue::Last)],
            BLACK.stroke_width(2),
        )))?;
        root.present()?;
        Ok(())
    }
}

/// Today's date, UTC, as `YYYY-MM-DD`.
pub fn today() -> String {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let (y, m, d) = civil_from_days((secs / 86_400) as i64);
    format!("{y:04}-{m:02}-{d:02}")
}

/// The proleptic Gregorian date `days` after 1970-01-01 (H. Hinnant's
/// `civil_from_days`).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::super::figure::{Anchor, Better};
    use super::*;

    fn report() -> Report {
        let fig = |key: &str, name: &str, unit: &str, value, better, anchor| Figure {
            key: key.into(),
            name: name.into(),
            group: "ops_cpu".into(),
            unit: unit.into(),
            value,
            better,
            anchor,
        };
        let anchor = |label: &str, value| {
            Some(Anchor {
                key: format!("numpy_{label}"),
                label: label.into(),
                value,
            })
        };
        Report {
            date: "2026-11-22".into(),
            backend: "cpu".into(),
            device: "Test CPU".into(),
            anchor_sources: vec!["numpy 2.4.6".into()],
            figures: vec![
                fig(
                    "t_ms",
                    "relu",
                    "ms",
                    0.5,
                    Better::Lower,
                    anchor("numpy relu", Some(2.0)),
                ),
                fig(
                    "r_GBps",
                    "copy",
                    "GB/s",
                    50.0,
                    Better::Higher,
                    anchor("numpy copy", Some(100.0)),
                ),
                fig(
                    "s_ms",
                    "sum",
                    "ms",
                    1.5,
                    Better::Lower,
                    anchor("numpy sum", None),
                ),
                fig("l_us", "launch", "µs", 3.25, Better::Lower, None),
            ],
            skipped: vec![Skipped {
                case: "compile".into(),
                group: "compile".into(),
                reason: "measures a GPU backend; this run is on cpu".into(),
            }],
            info: vec![("n".into(), "4194304".into())],
            lines: vec![
                ("t_ms".into(), "0.5000".into()),
                ("n".into(), "4194304".into()),
            ],
        }
    }

    #[test]
    fn markdown_table() {
        let expected = "\
## unigpu bench, 2026-11-22: cpu backend, Test CPU

Anchors:

- numpy 2.4.6

Ratio: how many times better unigpu is than the anchor: anchor/ours for times, ours/anchor for rates; above 1 is better.

| group | figure | unigpu | anchor | anchor value | ratio |
|---|---|---|---|---|---|
| ops_cpu | relu (ms) | 0.5000 | numpy relu | 2.000 | 4.00× |
| ops_cpu | copy (GB/s) | 50.000 | numpy copy | 100.0 | 0.50× |
| ops_cpu | sum (ms) | 1.500 | numpy sum | not measured | — |
| ops_cpu | launch (µs) | 3.250 | — | — | — |
| compile | compile (case) | skipped: measures a GPU backend; this run is on cpu | — | — | — |
";
        assert_eq!(report().markdown(), expected);
    }

    #[test]
    fn markdown_without_anchors_says_how_to_get_them() {
        let mut r = report();
        r.anchor_sources.clear();
        assert!(
            r.markdown()
                .contains("Anchors: none given (`--anchors FILE`, `--numpy`).\n")
        );
    }

    #[test]
    fn json_report() {
        let expected = r#"{
  "date": "2026-11-22",
  "backend": "cpu",
  "device": "Test CPU",
  "ratio_meaning": "how many times better unigpu is than the anchor: anchor/ours for times, ours/anchor for rates; above 1 is better",
  "anchor_sources": [
    "numpy 2.4.6"
  ],
  "figures": [
    {
      "key": "t_ms",
      "name": "relu",
      "group": "ops_cpu",
      "unit": "ms",
      "value": 0.5,
      "better": "lower",
      "anchor": {
        "key": "numpy_numpy relu",
        "label": "numpy relu",
        "value": 2.0
      },
      "ratio": 4.0
    },
    {
      "key": "r_GBps",
      "name": "copy",
      "group": "ops_cpu",
      "unit": "GB/s",
      "value": 50.0,
      "better": "higher",
      "anchor": {
        "key": "numpy_numpy copy",
        "label": "numpy copy",
        "value": 100.0
      },
      "ratio": 0.5
    },
    {
      "key": "s_ms",
      "name": "sum",
      "group": "ops_cpu",
      "unit": "ms",
      "value": 1.5,
      "better": "lower",
      "anchor": {
        "key": "numpy_numpy sum",
        "label": "numpy sum",
        "value": null
      },
      "ratio": null
    },
    {
      "key": "l_us",
      "name": "launch",
      "group": "ops_cpu",
      "unit": "µs",
      "value": 3.25,
      "better": "lower",
      "anchor": null,
      "ratio": null
    }
  ],
  "skipped": [
    {
      "case": "compile",
      "group": "compile",
      "reason": "measures a GPU backend; this run is on cpu"
    }
  ],
  "info": {
    "n": "4194304"
  }
}"#;
        assert_eq!(report().json().expect("json"), expected);
    }

    #[test]
    fn lines_keep_the_old_key_value_format() {
        assert_eq!(
            report().lines(),
            "unigpu_backend cpu\nunigpu_device Test_CPU\nt_ms 0.5000\nn 4194304\n\
             # skipped case compile: measures a GPU backend; this run is on cpu\n"
        );
    }

    #[test]
    fn the_plot_is_an_svg_with_a_labelled_bar_per_ratio() {
        let dir = std::env::temp_dir().join(format!("unigpu-bench-plot-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let path = dir.join("bench.svg");
        report().plot(&path).expect("plot");
        let svg = std::fs::read_to_string(&path).expect("the SVG was written");
        let _ = std::fs::remove_dir_all(&dir);
        assert!(svg.starts_with("<svg"), "{}", &svg[..svg.len().min(200)]);
        for label in [
            "relu (ms) vs numpy relu",
            "copy (GB/s) vs numpy copy",
            "4.00×",
            "0.50×",
            "above 1: unigpu is better",
        ] {
            assert!(svg.contains(label), "no {label:?} in the SVG");
        }
        // No ratio, no bar.
        assert!(!svg.contains("sum (ms) vs"));
        assert_eq!(svg.matches("<rect").count() - 1, 2, "background + 2 bars");
    }

    #[test]
    fn the_plot_without_ratios_says_so() {
        let dir = std::env::temp_dir().join(format!("unigpu-bench-plot0-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let path = dir.join("bench.svg");
        let mut r = report();
        r.figures.retain(|f| f.ratio().is_none());
        r.plot(&path).expect("plot");
        let svg = std::fs::read_to_string(&path).expect("the SVG was written");
        let _ = std::fs::remove_dir_all(&dir);
        assert!(svg.contains("no figure has an anchor value in this run"));
    }

    #[test]
    fn dates_from_days_since_the_epoch() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(59), (1970, 3, 1));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
        // 2026-11-22
        assert_eq!(civil_from_days(20_779), (2026, 11, 22));
        assert_eq!(today().len(), 10);
    }
}
