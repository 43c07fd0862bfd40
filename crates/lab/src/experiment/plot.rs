//! SVG charts with plotters: grouped bars with error bars (\[PB\] Figure 3: FRT and PLT per
//! scheduler per scenario) and CDFs of stream completion times (\[SEC\] Figure 5).

use std::path::Path;

use plotters::prelude::*;

type Error = Box<dyn std::error::Error>;

/// One bar chart panel: its y label and `values[group][series]` as (mean, sd).
pub type Panel<'a> = (&'a str, Vec<Vec<Option<(f64, f64)>>>);

fn color(i: usize) -> RGBColor {
    // Okabe-Ito, readable by most colour-blind readers; then plotters' palette.
    const COLORS: [RGBColor; 8] = [
        RGBColor(0, 114, 178),
        RGBColor(213, 94, 0),
        RGBColor(0, 158, 115),
        RGBColor(204, 121, 167),
        RGBColor(230, 159, 0),
        RGBColor(86, 180, 233),
        RGBColor(0, 0, 0),
        RGBColor(240, 228, 66),
    ];
    COLORS.get(i).copied().unwrap_or_else(|| {
        let c = Palette99::pick(i).to_rgba();
        RGBColor(c.0, c.1, c.2)
    })
}

/// Grouped bars: one panel per metric, groups along x (scenarios), one bar per series
/// (scheduler) in each group with its sd as an error bar. `values[metric][group][series]`.
pub fn bars(
    file: &Path,
    title: &str,
    groups: &[String],
    series: &[String],
    panels: &[Panel<'_>],
) -> Result<(), Error> {
    let width = (groups.len() * (series.len() + 1) * 14 + 190).clamp(830, 2600) as u32;
    let height = 300 * panels.len().max(1) as u32 + 40;
    let root = SVGBackend::new(file, (width, height)).into_drawing_area();
    root.fill(&WHITE)?;
    let root = root.titled(title, ("sans-serif", 20))?;
    // The legend to the right of the panels, so it never hides a bar.
    let (root, legend) = root.split_horizontally(width.saturating_sub(190));
    for (s, name) in series.iter().enumerate() {
        let y = 40 + 18 * s as i32;
        legend.draw(&Rectangle::new([(10, y), (24, y + 12)], color(s).filled()))?;
        legend.draw(&Text::new(name.as_str(), (30, y), ("sans-serif", 14)))?;
    }
    let areas = root.split_evenly((panels.len().max(1), 1));
    let slots = series.len() + 1;
    let n = (groups.len() * slots).max(1) as u32;
    for ((metric, values), area) in panels.iter().zip(&areas) {
        let top = values
            .iter()
            .flatten()
            .flatten()
            .map(|(m, sd)| m + sd)
            .fold(0.0_f64, f64::max);
        let top = if top > 0.0 { top * 1.1 } else { 1.0 };
        let mut chart = ChartBuilder::on(area)
            .margin(8)
            .x_label_area_size(28)
            .y_label_area_size(60)
            .build_cartesian_2d((0..n).into_segmented(), 0.0..top)?;
        let mid = (series.len() / 2) as u32;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(n as usize + 1)
            .x_label_formatter(&|x| match x {
                SegmentValue::CenterOf(j) if j % slots as u32 == mid => groups
                    .get((j / slots as u32) as usize)
                    .cloned()
                    .unwrap_or_default(),
                _ => String::new(),
            })
            .y_desc(*metric)
            .draw()?;
        for s in 0..series.len() {
            let c = color(s);
            let mut bars = Vec::new();
            let mut errors = Vec::new();
            for (g, row) in values.iter().enumerate() {
                let Some(Some((mean, sd))) = row.get(s) else {
                    continue;
                };
                let j = (g * slots + s) as u32;
                bars.push(Rectangle::new(
                    [
                        (SegmentValue::Exact(j), 0.0),
                        (SegmentValue::Exact(j + 1), *mean),
                    ],
                    c.filled(),
                ));
                errors.push(ErrorBar::new_vertical(
                    SegmentValue::CenterOf(j),
                    (mean - sd).max(0.0),
                    *mean,
                    mean + sd,
                    BLACK.stroke_width(1),
                    6,
                ));
            }
            chart.draw_series(bars)?;
            chart.draw_series(errors)?;
        }
    }
    root.present()?;
    Ok(())
}

/// Empirical CDFs, one line per series: the fraction of streams complete by each time (ms).
pub fn cdf(file: &Path, title: &str, series: &[(String, Vec<f64>)]) -> Result<(), Error> {
    let right = series
        .iter()
        .flat_map(|(_, v)| v.iter().copied())
        .filter(|v| v.is_finite())
        .fold(0.0_f64, f64::max);
    let right = if right > 0.0 { right * 1.05 } else { 1.0 };
    let root = SVGBackend::new(file, (800, 500)).into_drawing_area();
    root.fill(&WHITE)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 20))
        .margin(10)
        .x_label_area_size(40)
        .y_label_area_size(50)
        .build_cartesian_2d(0.0..right, 0.0..1.0)?;
    chart
        .configure_mesh()
        .x_desc("stream completion time (ms)")
        .y_desc("fraction of streams")
        .draw()?;
    for (i, (name, values)) in series.iter().enumerate() {
        let mut sorted: Vec<f64> = values.iter().copied().filter(|v| v.is_finite()).collect();
        if sorted.is_empty() {
            continue;
        }
        sorted.sort_by(f64::total_cmp);
        let n = sorted.len() as f64;
        // A step function: up by 1/n at each completion.
        let mut points = vec![(0.0, 0.0)];
        for (k, t) in sorted.iter().enumerate() {
            points.push((*t, k as f64 / n));
            points.push((*t, (k + 1) as f64 / n));
        }
        let c = color(i);
        chart
            .draw_series(LineSeries::new(points, c.stroke_width(2)))?
            .label(name.as_str())
            .legend(move |(x, y)| PathElement::new([(x, y), (x + 16, y)], c.stroke_width(2)));
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::LowerRight)
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()?;
    root.present()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn charts_are_svg_even_with_gaps() {
        let dir = std::env::temp_dir().join(format!("mq-exp-plot-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let bars_file = dir.join("bars.svg");
        let groups = vec!["pb-low".to_owned(), "pb-high".to_owned()];
        let series = vec!["lrf".to_owned(), "priority-bucket".to_owned()];
        let values = vec![
            vec![Some((100.0, 5.0)), None],
            vec![Some((200.0, 0.0)), Some((150.0, 10.0))],
        ];
        bars(&bars_file, "t", &groups, &series, &[("FRT (ms)", values)]).unwrap();
        let cdf_file = dir.join("cdf.svg");
        cdf(
            &cdf_file,
            "t",
            &[
                ("lrf".to_owned(), vec![3.0, 1.0, 2.0]),
                ("x".to_owned(), vec![]),
            ],
        )
        .unwrap();
        let a = std::fs::read_to_string(&bars_file).unwrap();
        let b = std::fs::read_to_string(&cdf_file).unwrap();
        let _ = std::fs::remove_dir_all(&dir);
        assert!(a.starts_with("<svg") && a.contains("priority-bucket"));
        assert!(b.starts_with("<svg") && b.contains("lrf"));
    }
}
