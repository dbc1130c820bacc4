//! The SVG chart: every row that has a baseline, as a bar of its ratio to that baseline (blue
//! where the ratio is on the good side of 1, red where it is not).

use super::Report;
use crate::server::Fatal;
use plotters::prelude::*;
use std::path::Path;

pub fn draw(report: &Report, path: &Path) -> Result<(), Fatal> {
    let rows: Vec<(String, f64, bool)> = report
        .rows
        .iter()
        .filter_map(|r| {
            r.ratio.map(|ratio| {
                (
                    format!("{}: {}", r.scenario, r.case),
                    ratio,
                    r.higher_is_better,
                )
            })
        })
        .collect();
    let height = 140 + 36 * rows.len().max(1) as u32;
    let root = SVGBackend::new(path, (1200, height)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| e.to_string())?;
    let max = rows.iter().map(|(_, r, _)| *r).fold(1.0_f64, f64::max) * 1.2;
    let caption = format!(
        "Chronicle / same-run baseline ({}, {})",
        if report.quick { "quick" } else { "full" },
        report.machine
    );
    let mut chart = ChartBuilder::on(&root)
        .caption(caption, ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(36)
        .y_label_area_size(520)
        .build_cartesian_2d(0.0..max, (0..rows.len().max(1)).into_segmented())
        .map_err(|e| e.to_string())?;
    let labels = rows.clone();
    chart
        .configure_mesh()
        .disable_y_mesh()
        .x_desc("ratio (1.0 = baseline)")
        .y_label_formatter(&move |y| match y {
            SegmentValue::CenterOf(i) => labels
                .get(*i)
                .map(|(l, _, _)| l.clone())
                .unwrap_or_default(),
            _ => String::new(),
        })
        .draw()
        .map_err(|e| e.to_string())?;
    chart
        .draw_series(rows.iter().enumerate().map(|(i, (_, ratio, higher))| {
            let good = (*ratio >= 1.0) == *higher;
            let color = if good { BLUE.mix(0.6) } else { RED.mix(0.6) };
            Rectangle::new(
                [
                    (0.0, SegmentValue::Exact(i)),
                    (*ratio, SegmentValue::Exact(i + 1)),
                ],
                color.filled(),
            )
        }))
        .map_err(|e| e.to_string())?;
    chart
        .draw_series(rows.iter().enumerate().map(|(i, (_, ratio, _))| {
            Text::new(
                format!("{ratio:.2}×"),
                (*ratio, SegmentValue::CenterOf(i)),
                ("sans-serif", 14),
            )
        }))
        .map_err(|e| e.to_string())?;
    root.present().map_err(|e| e.to_string())?;
    Ok(())
}
