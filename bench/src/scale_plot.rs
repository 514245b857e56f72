//! The SVG plot of `ftla scale --plot`: Gflop/s (left) and parallel
//! efficiency (right) against ranks, plain and fault-tolerant on the same
//! axes.

use ftla_bench::report::{ScalePoint, ScaleReport};
use plotters::prelude::*;
use std::path::Path;

const PLAIN: RGBColor = RGBColor(31, 119, 180);
const FT: RGBColor = RGBColor(214, 39, 40);

/// Draws `r` into the SVG file `path`.
pub fn draw(r: &ScaleReport, path: &Path) -> Result<(), String> {
    let err = |e: &dyn std::fmt::Display| e.to_string();
    let root = SVGBackend::new(path, (1000, 420)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| err(&e))?;
    let title = format!("ftla {} {} scaling ({} kernel)", r.op.name(), r.mode, r.blas_kernel);
    let root = root.titled(&title, ("sans-serif", 20)).map_err(|e| err(&e))?;
    let (left, right) = root.split_horizontally(500);
    let max_ranks = r.points.iter().map(|p| p.ranks).max().unwrap_or(1) as f64;
    let max_gflops = r.points.iter().map(|p| p.gflops).filter(|g| g.is_finite()).fold(0.0, f64::max);
    let max_eff = r.points.iter().map(|p| p.efficiency).filter(|e| e.is_finite()).fold(1.0, f64::max);
    panel(&left, r, "Gflop/s", max_ranks, max_gflops * 1.15 + 1e-9, |p| p.gflops)?;
    panel(&right, r, "parallel efficiency", max_ranks, max_eff * 1.15, |p| p.efficiency)?;
    root.present().map_err(|e| err(&e))
}

fn panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    r: &ScaleReport,
    what: &str,
    max_x: f64,
    max_y: f64,
    value: impl Fn(&ScalePoint) -> f64,
) -> Result<(), String>
where
    DB::ErrorType: 'static,
{
    let err = |e: &dyn std::fmt::Display| e.to_string();
    let mut chart = ChartBuilder::on(area)
        .margin(12)
        .caption(what, ("sans-serif", 16))
        .x_label_area_size(36)
        .y_label_area_size(56)
        .build_cartesian_2d(0.5..max_x + 0.5, 0.0..max_y)
        .map_err(|e| err(&e))?;
    // Ticks at whole rank counts only.
    let whole = |x: &f64| if (x - x.round()).abs() < 1e-9 { format!("{x:.0}") } else { String::new() };
    chart
        .configure_mesh()
        .x_labels(max_x as usize + 1)
        .x_label_formatter(&whole)
        .x_desc("ranks")
        .y_desc(what)
        .draw()
        .map_err(|e| err(&e))?;
    for (ft, color, label) in [(false, PLAIN, "plain"), (true, FT, "fault-tolerant")] {
        let pts: Vec<(f64, f64)> = r
            .points
            .iter()
            .filter(|p| p.ft == ft && value(p).is_finite())
            .map(|p| (p.ranks as f64, value(p)))
            .collect();
        if pts.is_empty() {
            continue;
        }
        chart
            .draw_series(LineSeries::new(pts.clone(), color.stroke_width(2)))
            .map_err(|e| err(&e))?
            .label(label)
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], color.stroke_width(2)));
        chart.draw_series(pts.iter().map(|&(x, y)| Circle::new((x, y), 4, color.filled()))).map_err(|e| err(&e))?;
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::LowerRight)
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()
        .map_err(|e| err(&e))?;
    Ok(())
}
