//! The comparison's vocabulary, beneath every section of the model: the
//! targets as the section builders see them ([`Column`]), the colour
//! bands and verdict bands of relative values, the report's options and
//! the ratio helpers. [`super::model`] re-exports all of it; the section
//! files import it from here, so none of them imports the model that
//! gathers them.

use serde::Serialize;

use crate::store::{StoredRun, StoredStep, StoredTarget};

/// Colour bands of relative QPS: at or below `low` is slower (red), at or
/// above `high` faster (green), between is similar (grey).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Bands {
    pub low: f64,
    pub high: f64,
}

impl Bands {
    /// The seeds' sysbench posts: red ≤ 0.97, green ≥ 1.03.
    pub const SYSBENCH: Bands = Bands {
        low: 0.97,
        high: 1.03,
    };
    /// The Insert Benchmark report's convention: 0.95 and 1.05.
    pub const IBENCH: Bands = Bands {
        low: 0.95,
        high: 1.05,
    };

    /// Parses `LOW,HIGH` (e.g. `0.97,1.03`); `what` names the option.
    pub fn parse(s: &str, what: &str) -> Result<Bands, String> {
        let err = || format!("{what} {s:?}: write LOW,HIGH with LOW < 1 < HIGH, e.g. 0.97,1.03");
        let (a, b) = s.split_once(',').ok_or_else(err)?;
        let low: f64 = a.trim().parse().map_err(|_| err())?;
        let high: f64 = b.trim().parse().map_err(|_| err())?;
        if !(low > 0.0 && low < 1.0 && high > 1.0 && high.is_finite()) {
            return Err(err());
        }
        Ok(Bands { low, high })
    }

    /// The band of a relative value, judged on the value as printed (two
    /// decimals), so a cell's colour always matches its text.
    pub fn classify(self, relative: f64) -> Band {
        let shown = round2(relative);
        if shown <= round2(self.low) {
            Band::Slower
        } else if shown >= round2(self.high) {
            Band::Faster
        } else {
            Band::Similar
        }
    }
}

/// Where a relative value falls among the [`Bands`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Band {
    Slower,
    Similar,
    Faster,
}

/// `x` rounded to two decimals exactly as relative values are printed
/// (formatting rounds ties to even, `f64::round` away from zero).
pub fn round2(x: f64) -> f64 {
    format!("{x:.2}").parse().unwrap_or(x)
}

/// What the user chose about a report.
#[derive(Clone, Debug, PartialEq)]
pub struct ReportOptions {
    /// Label of the base target (default: the first selected).
    pub base: Option<String>,
    /// Colour bands of the sysbench section.
    pub bands: Bands,
    /// Colour bands of the Insert Benchmark section.
    pub ibench_bands: Bands,
    /// Lowest relative QPS the bar charts show (the seeds draw from 0.8).
    pub chart_floor: f64,
    /// A test "did not change" when within this many basis points.
    pub within_bp: f64,
    /// When the report was made (RFC 3339 UTC).
    pub generated_at: String,
    /// The smallest change a verdict reports (`--min-effect`, default 0.01).
    pub min_effect: f64,
    /// The order of the sysbench tests within a group (`--order`).
    pub test_order: TestOrder,
    /// Also compare each target with the one before it (`--chain`).
    pub chain: bool,
}

/// How the sysbench tests of a group are listed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TestOrder {
    /// The seeds' tables: by test name, then range, each `.pre` run just
    /// before its post-write twin (the default).
    #[default]
    Seeds,
    /// The order the run measured them in.
    Run,
}

impl TestOrder {
    /// Parses `seeds` or `run`.
    pub fn parse(s: &str) -> Result<TestOrder, String> {
        match s.trim() {
            "seeds" => Ok(TestOrder::Seeds),
            "run" => Ok(TestOrder::Run),
            other => Err(format!(
                "--order {other:?}: write seeds (the blog posts' order) or run (the order measured)"
            )),
        }
    }
}

impl Default for ReportOptions {
    fn default() -> Self {
        ReportOptions {
            base: None,
            bands: Bands::SYSBENCH,
            ibench_bands: Bands::IBENCH,
            chart_floor: 0.8,
            within_bp: 2.0,
            generated_at: crate::util::time::now_rfc3339(),
            min_effect: crate::stats::DEFAULT_MIN_EFFECT,
            test_order: TestOrder::Seeds,
            chain: false,
        }
    }
}

/// A compared target as the section builders see it: its report label and
/// the stored run and target it came from.
#[derive(Clone, Debug)]
pub struct Column<'a> {
    pub label: &'a str,
    pub run: &'a StoredRun,
    /// The first repetition: what the target is, and its steps where one
    /// measurement is wanted (plans, context).
    pub target: &'a StoredTarget,
    /// Every repetition, in order (the first is `target`).
    pub repetitions: Vec<&'a StoredTarget>,
}

impl<'a> Column<'a> {
    /// The first reported step named `name`, if this target ran it.
    pub fn step(&self, name: &str) -> Option<&'a StoredStep> {
        self.target
            .steps
            .iter()
            .find(|s| s.info.reported && s.info.name == name)
    }

    /// The reported (or `.pre`, see [`is_pre`]) step named `name` in each
    /// repetition that ran it, with the repetition's index.
    pub fn steps(&self, name: &str) -> Vec<(u32, &'a StoredStep)> {
        self.repetitions
            .iter()
            .filter_map(|t| {
                let s = t
                    .steps
                    .iter()
                    .find(|s| (s.info.reported || is_pre(&s.info.name)) && s.info.name == name)?;
                Some((t.repetition, s))
            })
            .collect()
    }

    /// The `--interleave` order the column's run took (`steps`,
    /// `together`, …), as stored with the run.
    pub fn interleave(&self) -> Option<&'a str> {
        self.run
            .info
            .params
            .get("interleave")
            .and_then(|v| v.as_str())
    }

    /// Whether the column's run measured its targets at the same time
    /// (`--interleave together`): its rates are a shared CPU's, and
    /// tidemark's own CPU (`cli/o`) counts every target's clients.
    pub fn measured_at_once(&self) -> bool {
        self.interleave() == Some("together")
    }
}

/// Whether a step is a `.pre` run (a read test measured before the write
/// block): not a reported test, but shown beside its post-write twin.
pub fn is_pre(name: &str) -> bool {
    name.contains(".pre_") || name.ends_with(".pre")
}

/// `base` for the first column, then `col-1`, `col-2`…
pub fn column_name(i: usize) -> String {
    if i == 0 {
        "base".into()
    } else {
        format!("col-{i}")
    }
}

/// The relative value `value / base`, when both are positive and finite.
pub fn relative(value: f64, base: f64) -> Option<f64> {
    (value.is_finite() && base.is_finite() && base > 0.0 && value >= 0.0).then(|| value / base)
}
