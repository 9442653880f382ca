//! PNG and SVG figures for `kbandit`, drawn with `plotters`.
//!
//! Text is rendered with the DejaVu Sans bytes shipped by the `dejavu` crate (registered once with
//! plotters' `ab_glyph` backend), so no system fonts or fontconfig are needed. SVGs name the
//! `sans-serif` family in `<text>` elements instead of embedding the font.

use plotters::coord::Shift;
use plotters::coord::ranged1d::{Ranged, ValueFormatter};
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use std::fmt::Display;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

const SIZE: (u32, u32) = (1000, 700);
const FONT: &str = "sans-serif";
/// Lines are subsampled to at most about this many points, so SVGs stay small.
const MAX_POINTS: usize = 1000;
/// Tableau 10 (matplotlib's `tab10`), cycled when there are more series.
const PALETTE: [u32; 10] = [
    0x1f77b4, 0xff7f0e, 0x2ca02c, 0xd62728, 0x9467bd, 0x8c564b, 0xe377c2, 0x7f7f7f, 0xbcbd22,
    0x17becf,
];

/// One method's curve: mean cumulative regret per round and its standard deviation.
#[derive(Debug, Clone, Copy)]
pub struct Curve<'a> {
    /// Legend label.
    pub label: &'a str,
    /// Mean cumulative regret after rounds 1..=T.
    pub mean: &'a [f64],
    /// Standard deviation of the cumulative regret, same length as `mean`.
    pub std: &'a [f64],
}

/// One bound's band over a 1-D grid.
#[derive(Debug, Clone, Copy)]
pub struct Band<'a> {
    /// Legend label.
    pub label: &'a str,
    /// Lower confidence bound at each grid point.
    pub lcb: &'a [f64],
    /// Upper confidence bound at each grid point.
    pub ucb: &'a [f64],
}

/// Mean cumulative regret vs round with a ±1 std shaded band per method, labelled axes
/// ("round t", "cumulative regret"), a legend (right of the axes), and `title`. Writes `stem.png`
/// (1000×700) and `stem.svg`. x runs over 1..=T.
///
/// The y-axis is linear from 0, unless the largest final mean regret is over 10× the smallest
/// (typically a random baseline beside good methods): then it is logarithmic, from half the
/// smallest mean after the first 5% of rounds, and labelled "cumulative regret (log scale)".
pub fn regret_plot(stem: &Path, title: &str, curves: &[Curve<'_>]) -> Result<(), String> {
    let t = curves.first().map_or(0, |c| c.mean.len());
    if t == 0 || curves.iter().any(|c| c.mean.len() != t || c.std.len() != t) {
        let stem = stem.display();
        return Err(format!("{stem}: no curves, or curves of different lengths"));
    }
    let mut fig = Figure::default();
    (fig.title, fig.desc) = (title, ("round t", "cumulative regret"));
    for (i, c) in curves.iter().enumerate() {
        let point = |j: usize, s: f64| ((j + 1) as f64, c.mean[j] + s * c.std[j]);
        let at = |s: f64| thin(t).map(|j| point(j, s)).collect();
        fig.bands.push((colour(i), at(-1.0), at(1.0)));
        fig.lines.push((colour(i), at(0.0)));
        fig.legend.push((c.label, colour(i), Mark::Band));
    }
    fig.x = 1.0..t.max(2) as f64;
    let upper = fig.bands.iter().flat_map(|b| &b.2);
    let top = range(upper.map(|p| p.1)).map_or(1.0, |r| r.1);
    let (lo, hi) = range(curves.iter().map(|c| c.mean[t - 1])).unwrap_or((0.0, 0.0));
    if lo > 0.0 && hi > 10.0 * lo {
        let later = curves.iter().flat_map(|c| c.mean[t / 20..].iter().copied());
        let floor = range(later.filter(|&v| v > 0.0)).map_or(lo, |r| r.0) / 2.0;
        (fig.y, fig.log_y, fig.desc.1) = (floor..1.5 * top, true, "cumulative regret (log scale)");
    } else {
        let bottom = range(curves.iter().flat_map(|c| c.mean.iter().copied()));
        let bottom = bottom.map_or(0.0, |r| r.0.min(0.0));
        fig.y = bottom..top.max(bottom + 1e-9) + 0.05 * (top - bottom).abs();
    }
    fig.render(stem)
}

/// Paper-003-Figures-1–2 style plot: each method's mean cumulative regret against the mean
/// running time at the same round (`times[i]` for `curves[i]`), so the regret–time trade-off
/// reads off one picture: axes "running time (s)" and "cumulative regret", a legend, `title`.
/// Writes `stem.png` and `stem.svg`.
pub fn tradeoff_plot(
    stem: &Path,
    title: &str,
    curves: &[Curve<'_>],
    times: &[&[f64]],
) -> Result<(), String> {
    let t = curves.first().map_or(0, |c| c.mean.len());
    let lengths_ok = curves.iter().all(|c| c.mean.len() == t)
        && times.len() == curves.len()
        && times.iter().all(|x| x.len() == t);
    if t == 0 || !lengths_ok {
        let stem = stem.display();
        return Err(format!("{stem}: no curves, or curves of different lengths"));
    }
    let mut fig = Figure::default();
    (fig.title, fig.desc) = (title, ("running time (s)", "cumulative regret"));
    for (i, (c, x)) in curves.iter().zip(times).enumerate() {
        fig.lines
            .push((colour(i), thin(t).map(|j| (x[j], c.mean[j])).collect()));
        fig.legend.push((c.label, colour(i), Mark::Line));
    }
    let right = range(times.iter().map(|x| x[t - 1])).map_or(1.0, |r| r.1);
    fig.x = 0.0..right.max(1e-6) * 1.05;
    let top = range(curves.iter().flat_map(|c| c.mean.iter().copied())).map_or(1.0, |r| r.1);
    fig.y = 0.0..top.max(1e-9) * 1.05;
    fig.render(stem)
}

/// One named series of (x, y) points.
#[derive(Debug, Clone)]
pub struct Series {
    /// Legend label.
    pub label: String,
    /// The points, in increasing x.
    pub points: Vec<(f64, f64)>,
}

/// Lines with dots on logarithmic x and y axes (e.g. time per round against t), a legend and
/// `title`; `desc` names the axes. Writes `stem.png` and `stem.svg`. Non-positive values are
/// left out.
pub fn loglog_plot(
    stem: &Path,
    title: &str,
    desc: (&str, &str),
    series: &[Series],
) -> Result<(), String> {
    let positive = |p: &&(f64, f64)| p.0 > 0.0 && p.1 > 0.0 && p.0.is_finite() && p.1.is_finite();
    let all: Vec<(f64, f64)> = series
        .iter()
        .flat_map(|s| s.points.iter().filter(positive).copied())
        .collect();
    let (Some(xr), Some(yr)) = (
        range(all.iter().map(|p| p.0)),
        range(all.iter().map(|p| p.1)),
    ) else {
        return Err(format!("{}: nothing to plot", stem.display()));
    };
    let mut fig = Figure::default();
    (fig.title, fig.desc) = (title, desc);
    for (i, s) in series.iter().enumerate() {
        let pts: Points = s.points.iter().filter(positive).copied().collect();
        fig.lines.push((colour(i), pts.clone()));
        fig.marks.push((colour(i), pts));
        fig.legend.push((&s.label, colour(i), Mark::Line));
    }
    (fig.log_x, fig.log_y) = (true, true);
    fig.x = xr.0 / 1.5..xr.1 * 1.5;
    fig.y = yr.0 / 2.0..yr.1 * 2.0;
    fig.render(stem)
}

/// One series of a [`scatter_plot`]: points `(x, y, note)` drawn as dots of one colour, each
/// with its note written beside it.
#[derive(Debug, Clone)]
pub struct Scatter {
    /// Legend label.
    pub label: String,
    /// The points and their notes.
    pub points: Vec<(f64, f64, String)>,
}

/// Paper-003-Figures-1–5 style scatter: one dot per configuration (e.g. final regret against
/// running time), coloured by series and annotated with its note, on a logarithmic x-axis and
/// a linear y-axis from 0, a legend and `title`; `desc` names the axes. Writes `stem.png` and
/// `stem.svg`. Points with a non-positive or non-finite x are left out.
pub fn scatter_plot(
    stem: &Path,
    title: &str,
    desc: (&str, &str),
    series: &[Scatter],
) -> Result<(), String> {
    let keep = |p: &&(f64, f64, String)| p.0 > 0.0 && p.0.is_finite() && p.1.is_finite();
    let all: Vec<(f64, f64)> = series
        .iter()
        .flat_map(|s| s.points.iter().filter(keep).map(|p| (p.0, p.1)))
        .collect();
    let (Some(xr), Some(yr)) = (
        range(all.iter().map(|p| p.0)),
        range(all.iter().map(|p| p.1)),
    ) else {
        return Err(format!("{}: nothing to plot", stem.display()));
    };
    let mut fig = Figure::default();
    (fig.title, fig.desc) = (title, desc);
    for (i, s) in series.iter().enumerate() {
        let pts: Vec<&(f64, f64, String)> = s.points.iter().filter(keep).collect();
        fig.marks
            .push((colour(i), pts.iter().map(|p| (p.0, p.1)).collect()));
        for p in pts {
            fig.notes.push((colour(i), (p.0, p.1), p.2.clone()));
        }
        fig.legend.push((&s.label, colour(i), Mark::Dot));
    }
    fig.log_x = true;
    fig.x = xr.0 / 2.0..xr.1 * 2.0;
    let bottom = yr.0.min(0.0);
    fig.y = bottom..yr.1.max(bottom + 1e-9) * 1.1;
    fig.render(stem)
}

/// Paper-001-Figure-1 style plot: the true function f over the grid `xs` (black line), the
/// observations as dots, and for each band its UCB and LCB as two lines of one colour with a
/// light fill between, a legend (right of the axes), axes "x" and "f(x)", and `title`. Writes
/// `stem.png` and `stem.svg`.
///
/// The y-range covers f and the observations, and widens to take in the bands by at most half
/// that span above and below: early bounds may be far wider than f, and are clipped there.
pub fn bands_plot(
    stem: &Path,
    title: &str,
    xs: &[f64],
    truth: &[f64],
    observations: &[(f64, f64)],
    bands: &[Band<'_>],
) -> Result<(), String> {
    let n = xs.len();
    if n < 2 || truth.len() != n || bands.iter().any(|b| b.lcb.len() != n || b.ucb.len() != n) {
        let stem = stem.display();
        return Err(format!(
            "{stem}: f and each band need a value per grid point (≥ 2)"
        ));
    }
    let mut fig = Figure::default();
    (fig.title, fig.desc) = (title, ("x", "f(x)"));
    fig.legend = vec![("f", BLACK, Mark::Line), ("observations", BLACK, Mark::Dot)];
    let line = |ys: &[f64]| thin(n).map(|j| (xs[j], ys[j])).collect::<Vec<_>>();
    for (i, b) in bands.iter().enumerate() {
        fig.lines.push((colour(i), line(b.lcb)));
        fig.lines.push((colour(i), line(b.ucb)));
        fig.bands.push((colour(i), line(b.lcb), line(b.ucb)));
        fig.legend.push((b.label, colour(i), Mark::Band));
    }
    fig.lines.push((BLACK, line(truth)));
    fig.dots = observations.to_vec();
    let xr = range(xs.iter().copied().chain(observations.iter().map(|o| o.0)));
    let (x0, x1) = xr.unwrap_or((0.0, 1.0));
    let observed = observations.iter().map(|o| o.1);
    let data = truth.iter().copied().chain(observed);
    let (d0, d1) = range(data).unwrap_or((-1.0, 1.0));
    let span = if d1 > d0 { d1 - d0 } else { d0.abs().max(1.0) };
    let edges = fig.bands.iter().flat_map(|b| b.1.iter().chain(&b.2));
    let (b0, b1) = range(edges.map(|p| p.1)).unwrap_or((d0, d1));
    let lo = b0.min(d0).max(d0 - span / 2.0);
    let hi = b1.max(d1).min(d1 + span / 2.0);
    fig.x = x0..x1.max(x0 + 1e-9);
    fig.y = lo - 0.03 * (hi - lo)..hi + 0.03 * (hi - lo);
    fig.render(stem)
}

/// What a legend entry shows beside its label.
enum Mark {
    Line,
    Band,
    Dot,
}

type Points = Vec<(f64, f64)>;

/// A figure as data: shaded bands `(colour, lower, upper)`, lines, black dots, and a legend.
#[derive(Default)]
struct Figure<'a> {
    title: &'a str,
    desc: (&'a str, &'a str),
    x: Range<f64>,
    y: Range<f64>,
    log_y: bool,
    log_x: bool,
    bands: Vec<(RGBColor, Points, Points)>,
    lines: Vec<(RGBColor, Points)>,
    dots: Points,
    /// Coloured dots on the lines' data points.
    marks: Vec<(RGBColor, Points)>,
    /// Coloured text beside a data point.
    notes: Vec<(RGBColor, (f64, f64), String)>,
    legend: Vec<(&'a str, RGBColor, Mark)>,
}

type DrawResult<DB> = Result<(), DrawingAreaErrorKind<<DB as DrawingBackend>::ErrorType>>;

/// Something drawn onto any plotters backend, written as PNG and SVG by [`render`].
trait Drawing {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult<DB>;
}

/// Registers the bundled DejaVu Sans under [`FONT`], once per process.
fn load_font() -> Result<(), String> {
    static LOADED: OnceLock<Result<(), String>> = OnceLock::new();
    LOADED
        .get_or_init(|| {
            plotters::style::register_font(FONT, FontStyle::Normal, dejavu::sans::regular())
                .map_err(|_| "cannot load the bundled DejaVu Sans font".to_string())
        })
        .clone()
}

impl Drawing for Figure<'_> {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult<DB> {
        Figure::draw(self, root)
    }
}

impl Drawing for Bars<'_> {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult<DB> {
        Bars::draw(self, root)
    }
}

/// Writes `drawing` to `stem.png` and `stem.svg`.
fn render(drawing: &impl Drawing, stem: &Path) -> Result<(), String> {
    load_font()?;
    let path = |ext: &str| {
        let mut p = stem.as_os_str().to_owned();
        p.push(ext);
        PathBuf::from(p)
    };
    let (png, svg) = (path(".png"), path(".svg"));
    let fail = |p: &Path, e: &dyn Display| format!("cannot write {}: {e}", p.display());
    let root = BitMapBackend::new(&png, SIZE).into_drawing_area();
    let done = drawing.draw(&root).and_then(|()| root.present());
    done.map_err(|e| fail(&png, &e))?;
    let root = SVGBackend::new(&svg, SIZE).into_drawing_area();
    let done = drawing.draw(&root).and_then(|()| root.present());
    done.map_err(|e| fail(&svg, &e))
}

impl Figure<'_> {
    /// Writes `stem.png` and `stem.svg`.
    fn render(&self, stem: &Path) -> Result<(), String> {
        render(self, stem)
    }

    /// Title, legend panel at the right (as wide as its longest label), then the axes.
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult<DB> {
        root.fill(&WHITE)?;
        let area = root.titled(self.title, (FONT, 26))?;
        let style = TextStyle::from((FONT, 17).into_font()).pos(Pos::new(HPos::Left, VPos::Center));
        let mut width = 0;
        for (label, ..) in &self.legend {
            width = width.max(area.estimate_text_size(label, &style)?.0);
        }
        let (axes, panel) =
            area.split_horizontally(area.dim_in_pixel().0.saturating_sub(width + 70));
        for (i, (label, c, mark)) in self.legend.iter().enumerate() {
            let y = 30 + 28 * i as i32;
            if let Mark::Band = mark {
                let corners = [(10, y - 8), (40, y + 8)];
                panel.draw(&Rectangle::new(corners, c.mix(0.2).filled()))?;
            }
            if let Mark::Dot = mark {
                panel.draw(&Circle::new((25, y), 4, c.filled()))?;
            } else {
                panel.draw(&PathElement::new([(10, y), (40, y)], c.stroke_width(2)))?;
            }
            panel.draw_text(label, &style, (50, y))?;
        }
        let x = RangedCoordf64::from(self.x.clone());
        match (self.log_x, self.log_y) {
            (true, true) => self.axes(
                &axes,
                LogCoord::from(self.x.clone().log_scale()),
                LogCoord::from(self.y.clone().log_scale()),
            ),
            (true, false) => self.axes(
                &axes,
                LogCoord::from(self.x.clone().log_scale()),
                RangedCoordf64::from(self.y.clone()),
            ),
            (false, true) => self.axes(&axes, x, LogCoord::from(self.y.clone().log_scale())),
            (false, false) => self.axes(&axes, x, RangedCoordf64::from(self.y.clone())),
        }
    }

    /// Axes, grid, bands, lines and dots, all clipped to the y-range.
    fn axes<DB, X, Y>(&self, area: &DrawingArea<DB, Shift>, x: X, y: Y) -> DrawResult<DB>
    where
        DB: DrawingBackend,
        X: Ranged<ValueType = f64> + ValueFormatter<f64>,
        Y: Ranged<ValueType = f64> + ValueFormatter<f64>,
    {
        let (lo, hi) = (self.y.start, self.y.end);
        let mut chart = ChartBuilder::on(area)
            .margin(15)
            .x_label_area_size(50)
            .y_label_area_size(80)
            .build_cartesian_2d(x, y)?;
        chart
            .configure_mesh()
            .x_desc(self.desc.0)
            .y_desc(self.desc.1)
            .label_style((FONT, 16))
            .axis_desc_style((FONT, 20))
            .x_label_formatter(&tick)
            .y_label_formatter(&tick)
            .bold_line_style(BLACK.mix(0.12))
            .light_line_style(TRANSPARENT)
            .draw()?;
        for (c, lower, upper) in &self.bands {
            let edge = upper.iter().chain(lower.iter().rev());
            let edge = edge
                .filter(|p| p.1.is_finite())
                .map(|&(x, y)| (x, y.clamp(lo, hi)));
            let edge: Points = edge.collect();
            chart.draw_series([Polygon::new(edge, c.mix(0.2).filled())])?;
        }
        for (c, pts) in &self.lines {
            let runs = clip(pts, lo, hi).into_iter();
            chart.draw_series(runs.map(|run| PathElement::new(run, c.stroke_width(2))))?;
        }
        for (c, pts) in &self.marks {
            let inside = pts.iter().filter(|p| (lo..=hi).contains(&p.1));
            chart.draw_series(inside.map(|&p| Circle::new(p, 4, c.filled())))?;
        }
        for (c, at, text) in &self.notes {
            let style = TextStyle::from((FONT, 13).into_font()).color(c);
            let note = EmptyElement::at(*at) + Text::new(text.clone(), (6, -16), style);
            chart.draw_series([note])?;
        }
        let dots = self.dots.iter().filter(|p| (lo..=hi).contains(&p.1));
        chart.draw_series(dots.map(|&p| Circle::new(p, 4, BLACK.filled())))?;
        Ok(())
    }
}

fn colour(i: usize) -> RGBColor {
    let c = PALETTE[i % PALETTE.len()];
    RGBColor((c >> 16) as u8, (c >> 8) as u8, c as u8)
}

/// Indices `0..n` thinned to at most about [`MAX_POINTS`], always keeping the last.
fn thin(n: usize) -> impl Iterator<Item = usize> {
    let step = n.div_ceil(MAX_POINTS).max(1);
    let last = (n > 0 && !(n - 1).is_multiple_of(step)).then(|| n - 1);
    (0..n).step_by(step).chain(last)
}

/// The smallest and largest finite values, or `None` if there are none.
fn range(values: impl IntoIterator<Item = f64>) -> Option<(f64, f64)> {
    let finite = values.into_iter().filter(|v| v.is_finite());
    finite.fold(None, |acc, v| {
        let (lo, hi) = acc.unwrap_or((v, v));
        Some((lo.min(v), hi.max(v)))
    })
}

/// Tick labels without trailing zeros; scientific notation for very large or small values.
fn tick(v: &f64) -> String {
    if v.abs() >= 1e5 || (v.abs() < 1e-3 && *v != 0.0) {
        // Four significant digits, trailing zeros dropped: a log axis's 10⁻⁴ arrives as
        // 9.999999999999999e-5.
        let s = format!("{v:.3e}");
        let (mantissa, exponent) = s.split_once('e').unwrap_or((&s, "0"));
        let mantissa = mantissa.trim_end_matches('0').trim_end_matches('.');
        return format!("{mantissa}e{exponent}");
    }
    let s = format!("{v:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// The parts of the polyline `pts` with `lo <= y <= hi`, cut exactly at the limits; non-finite
/// points break the line.
fn clip(pts: &[(f64, f64)], lo: f64, hi: f64) -> Vec<Points> {
    let (mut runs, mut run) = (vec![], vec![]);
    for w in pts.windows(2) {
        let ((x0, y0), (x1, y1)) = (w[0], w[1]);
        let (a, b) = ((lo - y0) / (y1 - y0), (hi - y0) / (y1 - y0));
        let (t0, t1) = match (y0.is_finite() && y1.is_finite(), y0 == y1) {
            (false, _) => (1.0, 0.0),
            (true, true) if (lo..=hi).contains(&y0) => (0.0, 1.0),
            (true, true) => (1.0, 0.0),
            (true, false) => (a.min(b).max(0.0), a.max(b).min(1.0)),
        };
        if t0 > t1 {
            runs.push(std::mem::take(&mut run));
            continue;
        }
        let at = |t: f64| (x0 + t * (x1 - x0), y0 + t * (y1 - y0));
        if run.is_empty() {
            run.push(at(t0));
        }
        run.push(at(t1));
        if t1 < 1.0 {
            runs.push(std::mem::take(&mut run));
        }
    }
    runs.push(run);
    runs.retain(|r| r.len() > 1);
    runs
}

// Flynn & Reeb (2024) App. F: the bar chart of `reproduce loose` (Figure 7) and the time-per-step
// lines of `reproduce timing` (Figure 4).

/// One group of bars in [`grouped_bar_plot`]: a bar per category, in one colour.
#[derive(Debug, Clone, Copy)]
pub struct BarGroup<'a> {
    /// Legend label.
    pub label: &'a str,
    /// Bar height per category.
    pub mean: &'a [f64],
    /// Half-length of the error bar per category (e.g. one standard deviation).
    pub std: &'a [f64],
}

/// Paper-001-Figure-7 style grouped bar chart: for each category (x axis, named below it) one
/// bar per group, side by side in the group's colour, with a ±`std` error bar; a legend of the
/// groups (right of the axes), y axis `y_desc`, and `title`. Writes `stem.png` and `stem.svg`.
///
/// The y axis is linear from 0, unless the largest bar is over 10× the smallest positive one
/// (a random baseline beside good methods): then it is logarithmic, from half the smallest
/// lower error-bar end (or bar), and the bars rise from its bottom.
pub fn grouped_bar_plot(
    stem: &Path,
    title: &str,
    y_desc: &str,
    categories: &[&str],
    groups: &[BarGroup<'_>],
) -> Result<(), String> {
    let n = categories.len();
    if n == 0 || groups.is_empty() || groups.iter().any(|g| g.mean.len() != n || g.std.len() != n) {
        let stem = stem.display();
        return Err(format!("{stem}: no bars, or groups of different lengths"));
    }
    let values = groups.iter().flat_map(|g| g.mean.iter().copied());
    let (lo, hi) = range(values.clone().filter(|v| *v > 0.0)).unwrap_or((1.0, 1.0));
    let tops = groups
        .iter()
        .flat_map(|g| g.mean.iter().zip(g.std).map(|(m, s)| m + s));
    let top = range(tops).map_or(1.0, |r| r.1).max(hi);
    let log_y = hi > 10.0 * lo;
    let bottom = if log_y {
        let ends = groups
            .iter()
            .flat_map(|g| g.mean.iter().zip(g.std).map(|(m, s)| m - s));
        range(ends.filter(|v| *v > 0.0)).map_or(lo, |r| r.0.min(lo)) / 2.0
    } else {
        range(values).map_or(0.0, |r| r.0.min(0.0))
    };
    let y = bottom..if log_y { top * 1.5 } else { top * 1.05 };
    let desc = if log_y {
        format!("{y_desc} (log scale)")
    } else {
        y_desc.to_owned()
    };
    let bars = Bars {
        title,
        y_desc: &desc,
        categories,
        groups,
        y,
        log_y,
    };
    render(&bars, stem)
}

/// How [`time_lines_plot`] scales its y axis.
#[derive(Debug, Clone, Copy)]
pub enum YScale {
    /// Linear from 0 to the largest value.
    Linear,
    /// Linear from 0 to this value; lines above it are cut off (a zoomed-in view).
    LinearUpTo(f64),
    /// Logarithmic over the positive values.
    Log,
}

/// Paper-001-Figure-4 style lines (e.g. time per round against the round t), one per series,
/// with a legend, `desc` naming the axes, and `title`; the y axis as `scale`. Writes `stem.png`
/// and `stem.svg`. On the log scale, non-positive values are left out.
pub fn time_lines_plot(
    stem: &Path,
    title: &str,
    desc: (&str, &str),
    series: &[Series],
    scale: YScale,
) -> Result<(), String> {
    let finite = |p: &&(f64, f64)| p.0.is_finite() && p.1.is_finite();
    let positive = |p: &&(f64, f64)| p.1 > 0.0;
    let all: Vec<(f64, f64)> = series
        .iter()
        .flat_map(|s| s.points.iter().filter(finite).copied())
        .collect();
    let (Some(xr), Some(yr)) = (
        range(all.iter().map(|p| p.0)),
        range(all.iter().filter(positive).map(|p| p.1)),
    ) else {
        return Err(format!("{}: nothing to plot", stem.display()));
    };
    let mut fig = Figure::default();
    (fig.title, fig.desc) = (title, desc);
    for (i, s) in series.iter().enumerate() {
        let pts: Points = match scale {
            YScale::Log => s
                .points
                .iter()
                .filter(finite)
                .filter(positive)
                .copied()
                .collect(),
            _ => s.points.iter().filter(finite).copied().collect(),
        };
        fig.lines.push((colour(i), pts));
        fig.legend.push((&s.label, colour(i), Mark::Line));
    }
    fig.x = xr.0..xr.1.max(xr.0 + 1e-9);
    let all_y = range(all.iter().map(|p| p.1)).unwrap_or(yr);
    fig.y = match scale {
        YScale::Linear => 0.0_f64.min(all_y.0)..all_y.1.max(1e-12) * 1.05,
        YScale::LinearUpTo(top) => 0.0_f64.min(all_y.0)..top.max(1e-12),
        YScale::Log => yr.0 / 1.5..yr.1 * 1.5,
    };
    fig.log_y = matches!(scale, YScale::Log);
    fig.render(stem)
}

/// A grouped bar chart as data (see [`grouped_bar_plot`]).
struct Bars<'a> {
    title: &'a str,
    y_desc: &'a str,
    categories: &'a [&'a str],
    groups: &'a [BarGroup<'a>],
    y: Range<f64>,
    log_y: bool,
}

impl Bars<'_> {
    /// Title, legend panel at the right, then the axes (as [`Figure::draw`]).
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult<DB> {
        root.fill(&WHITE)?;
        let area = root.titled(self.title, (FONT, 22))?;
        let style = TextStyle::from((FONT, 17).into_font()).pos(Pos::new(HPos::Left, VPos::Center));
        let mut width = 0;
        for g in self.groups {
            width = width.max(area.estimate_text_size(g.label, &style)?.0);
        }
        let (axes, panel) =
            area.split_horizontally(area.dim_in_pixel().0.saturating_sub(width + 70));
        for (i, g) in self.groups.iter().enumerate() {
            let y = 30 + 28 * i as i32;
            let corners = [(10, y - 8), (40, y + 8)];
            panel.draw(&Rectangle::new(corners, colour(i).mix(0.7).filled()))?;
            panel.draw_text(g.label, &style, (50, y))?;
        }
        let x = RangedCoordf64::from(0.0..self.categories.len() as f64);
        if self.log_y {
            self.axes(root, &axes, x, LogCoord::from(self.y.clone().log_scale()))
        } else {
            self.axes(root, &axes, x, RangedCoordf64::from(self.y.clone()))
        }
    }

    /// Axes with the category names under the bars (drawn on `root`, whose coordinates are the
    /// backend's), the bars and their error bars.
    fn axes<DB, Y>(
        &self,
        root: &DrawingArea<DB, Shift>,
        area: &DrawingArea<DB, Shift>,
        x: RangedCoordf64,
        y: Y,
    ) -> DrawResult<DB>
    where
        DB: DrawingBackend,
        Y: Ranged<ValueType = f64> + ValueFormatter<f64>,
    {
        let (lo, hi) = (self.y.start, self.y.end);
        let mut chart = ChartBuilder::on(area)
            .margin(15)
            .x_label_area_size(50)
            .y_label_area_size(80)
            .build_cartesian_2d(x, y)?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(0)
            .y_desc(self.y_desc)
            .label_style((FONT, 16))
            .axis_desc_style((FONT, 20))
            .y_label_formatter(&tick)
            .bold_line_style(BLACK.mix(0.12))
            .light_line_style(TRANSPARENT)
            .draw()?;
        let below = TextStyle::from((FONT, 16).into_font()).pos(Pos::new(HPos::Center, VPos::Top));
        for (i, name) in self.categories.iter().enumerate() {
            let (px, py) = chart.backend_coord(&(i as f64 + 0.5, lo));
            root.draw_text(name, &below, (px, py + 8))?;
        }
        let width = 0.8 / self.groups.len() as f64;
        for (g, group) in self.groups.iter().enumerate() {
            let c = colour(g);
            for (i, (&m, &s)) in group.mean.iter().zip(group.std).enumerate() {
                if !m.is_finite() {
                    continue;
                }
                let left = i as f64 + 0.1 + g as f64 * width;
                let (right, mid) = (left + width, left + width / 2.0);
                let bar = [(left, lo), (right, m.clamp(lo, hi))];
                chart.draw_series([Rectangle::new(bar, c.mix(0.7).filled())])?;
                let (down, up) = ((m - s).clamp(lo, hi), (m + s).clamp(lo, hi));
                let cap = width / 4.0;
                let whisker = [
                    vec![(mid, down), (mid, up)],
                    vec![(mid - cap, down), (mid + cap, down)],
                    vec![(mid - cap, up), (mid + cap, up)],
                ];
                chart.draw_series(whisker.map(|w| PathElement::new(w, BLACK.stroke_width(1))))?;
            }
        }
        Ok(())
    }
}

/// Variances over a 1-D grid on a logarithmic y-axis (variance starvation, Calandriello et al.
/// 2019 §3), with axes "x" and "variance (log scale)" and `title`. The `reference` series
/// (the exact variance) is drawn as black dots at about 60 grid points, so that lines which
/// coincide with it stay visible; each of `series` is a line. Each `anchors` row
/// `(label, series index, xs)` marks a dictionary along the bottom in the colour of that
/// series. Values below 10⁻¹² times the largest are drawn at that floor (the starved
/// subset-of-regressors variance reaches 0), as the legend says. Writes `stem.png` and
/// `stem.svg`.
pub fn variance_plot(
    stem: &Path,
    title: &str,
    xs: &[f64],
    reference: (&str, &[f64]),
    series: &[(&str, &[f64])],
    anchors: &[(&str, usize, &[f64])],
) -> Result<(), String> {
    let n = xs.len();
    if n < 2 || reference.1.len() != n || series.iter().any(|s| s.1.len() != n) {
        let stem = stem.display();
        return Err(format!(
            "{stem}: each series needs a value per grid point (≥ 2)"
        ));
    }
    let values = || {
        series
            .iter()
            .flat_map(|s| s.1.iter().copied())
            .chain(reference.1.iter().copied())
    };
    let top = range(values()).map_or(1.0, |r| r.1).max(f64::MIN_POSITIVE);
    let floor = top * 1e-12;
    let lowest = values()
        .filter(|v| v.is_finite())
        .fold(top, f64::min)
        .max(floor);
    let mut fig = Figure::default();
    (fig.title, fig.desc) = (title, ("x", "variance (log scale)"));
    fig.legend.push((reference.0, BLACK, Mark::Dot));
    let step = n.div_ceil(60).max(1);
    fig.dots = (0..n)
        .step_by(step)
        .map(|j| (xs[j], reference.1[j].max(floor)))
        .collect();
    for (i, (label, values)) in series.iter().enumerate() {
        let line = thin(n).map(|j| (xs[j], values[j].max(floor))).collect();
        fig.lines.push((colour(i), line));
        fig.legend.push((label, colour(i), Mark::Line));
    }
    let floor_note = format!("(values < {floor:.0e} drawn at {floor:.0e})");
    fig.legend.push((&floor_note, WHITE, Mark::Line));
    for (row, (label, i, xs)) in anchors.iter().enumerate() {
        let y = lowest / 2f64.powi(2 * row as i32 + 1);
        fig.marks
            .push((colour(*i), xs.iter().map(|&a| (a, y)).collect()));
        fig.legend.push((label, colour(*i), Mark::Dot));
    }
    fig.y = lowest / 2f64.powi(2 * anchors.len() as i32 + 1)..top * 3.0;
    let (x0, x1) = range(xs.iter().copied()).unwrap_or((0.0, 1.0));
    fig.x = x0..x1.max(x0 + 1e-9);
    fig.log_y = true;
    fig.render(stem)
}

/// One curve of an [`xy_plot`]: a mean and its standard deviation at each x.
#[derive(Debug, Clone, Copy)]
pub struct XyCurve<'a> {
    /// Legend label.
    pub label: &'a str,
    /// The x values, increasing.
    pub x: &'a [f64],
    /// Mean at each x.
    pub mean: &'a [f64],
    /// Standard deviation at each x, same length as `mean`.
    pub std: &'a [f64],
}

/// Mean cumulative regret against `x_desc` (e.g. evaluations, or rounds of a batch) with a ±1
/// std shaded band per curve; the curves may have different x values and lengths. Axes
/// `x_desc` (logarithmic when `log_x`, for curves whose lengths differ by orders of magnitude)
/// and "cumulative regret" (linear, from 0 or below), a legend (right of the axes), and
/// `title`. Writes `stem.png` and `stem.svg`.
pub fn xy_plot(
    stem: &Path,
    title: &str,
    x_desc: &str,
    log_x: bool,
    curves: &[XyCurve<'_>],
) -> Result<(), String> {
    xy_plot_described(stem, title, x_desc, "cumulative regret", log_x, curves)
}

/// [`xy_plot`] with the y-axis described by `y_desc` instead of "cumulative regret".
pub fn xy_plot_described(
    stem: &Path,
    title: &str,
    x_desc: &str,
    y_desc: &str,
    log_x: bool,
    curves: &[XyCurve<'_>],
) -> Result<(), String> {
    let bad = |c: &XyCurve<'_>| {
        c.x.is_empty()
            || c.mean.len() != c.x.len()
            || c.std.len() != c.x.len()
            || (log_x && c.x.iter().any(|&x| x <= 0.0))
    };
    if curves.is_empty() || curves.iter().any(bad) {
        let stem = stem.display();
        return Err(format!(
            "{stem}: no curves, or a curve without one mean and std per (positive on a log axis) x"
        ));
    }
    let mut fig = Figure::default();
    (fig.title, fig.desc) = (title, (x_desc, y_desc));
    for (i, c) in curves.iter().enumerate() {
        let n = c.x.len();
        let at = |s: f64| {
            thin(n)
                .map(|j| (c.x[j], c.mean[j] + s * c.std[j]))
                .collect()
        };
        fig.bands.push((colour(i), at(-1.0), at(1.0)));
        fig.lines.push((colour(i), at(0.0)));
        fig.legend.push((c.label, colour(i), Mark::Band));
    }
    let (x0, x1) = range(curves.iter().flat_map(|c| c.x.iter().copied())).unwrap_or((1.0, 2.0));
    fig.log_x = log_x;
    fig.x = if log_x {
        x0..x1.max(x0 * 2.0)
    } else {
        x0..x1.max(x0 + 1.0)
    };
    let upper = fig.bands.iter().flat_map(|b| &b.2);
    let top = range(upper.map(|p| p.1)).map_or(1.0, |r| r.1);
    let bottom = range(curves.iter().flat_map(|c| c.mean.iter().copied()));
    let bottom = bottom.map_or(0.0, |r| r.0.min(0.0));
    fig.y = bottom..top.max(bottom + 1e-9) + 0.05 * (top - bottom).abs();
    fig.render(stem)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clip_cuts_lines_at_the_limits_and_at_gaps() {
        let pts = [
            (0.0, 0.0),
            (1.0, 2.0),
            (2.0, 0.0),
            (3.0, f64::NAN),
            (4.0, 0.5),
            (5.0, 0.5),
        ];
        let runs = clip(&pts, -1.0, 1.0);
        assert_eq!(
            runs,
            vec![
                vec![(0.0, 0.0), (0.5, 1.0)],
                vec![(1.5, 1.0), (2.0, 0.0)],
                vec![(4.0, 0.5), (5.0, 0.5)]
            ]
        );
    }

    #[test]
    fn thin_bounds_the_points_and_keeps_the_ends() {
        let kept: Vec<_> = thin(5000).collect();
        assert!(kept.len() <= MAX_POINTS + 1 && kept[0] == 0 && kept.last() == Some(&4999));
        assert_eq!(thin(3).collect::<Vec<_>>(), [0, 1, 2]);
    }

    #[test]
    fn both_plots_write_png_and_svg_with_the_bundled_font() {
        let dir = std::env::temp_dir().join(format!("kbandit-plot-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mean: Vec<f64> = (1..=50).map(|t| f64::from(t).sqrt()).collect();
        let curve = Curve {
            label: "method",
            mean: &mean,
            std: &mean,
        };
        regret_plot(&dir.join("regret"), "regret", &[curve]).unwrap();
        let xs = [0.0, 0.5, 1.0];
        let band = Band {
            label: "bound",
            lcb: &[-1.0, -1.0, -30.0],
            ucb: &[1.0, 1.0, 30.0],
        };
        bands_plot(
            &dir.join("bands"),
            "bands",
            &xs,
            &[0.0, 0.5, 0.0],
            &[(0.5, 0.4)],
            &[band],
        )
        .unwrap();
        for stem in ["regret", "bands"] {
            assert!(
                std::fs::metadata(dir.join(format!("{stem}.png")))
                    .unwrap()
                    .len()
                    > 1000
            );
            let svg = std::fs::read_to_string(dir.join(format!("{stem}.svg"))).unwrap();
            assert!(svg.starts_with("<svg") && svg.contains(stem));
        }
        assert!(
            regret_plot(&dir.join("missing/regret"), "x", &[curve])
                .unwrap_err()
                .contains("missing")
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
