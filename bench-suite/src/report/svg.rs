//! Minimal SVG building: escaped text, bars, lines, log-scale axes.

use std::fmt::Write;

/// Escapes `&`, `<`, `>` and quotes for XML text and attributes.
pub fn esc(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// An SVG document under construction.
pub struct Svg {
    pub width: f64,
    pub height: f64,
    body: String,
}

impl Svg {
    pub fn new(width: f64, height: f64) -> Self {
        Self { width, height, body: String::new() }
    }

    pub fn rect(&mut self, x: f64, y: f64, w: f64, h: f64, fill: &str, title: &str) {
        let _ = write!(
            self.body,
            r#"<rect x="{x:.1}" y="{y:.1}" width="{:.1}" height="{:.1}" fill="{fill}"><title>{}</title></rect>"#,
            w.max(0.0),
            h.max(0.0),
            esc(title)
        );
    }

    pub fn line(&mut self, x1: f64, y1: f64, x2: f64, y2: f64, stroke: &str, width: f64) {
        let _ = write!(
            self.body,
            r#"<line x1="{x1:.1}" y1="{y1:.1}" x2="{x2:.1}" y2="{y2:.1}" stroke="{stroke}" stroke-width="{width}"/>"#
        );
    }

    /// Text; `anchor` is `start`, `middle` or `end`.
    pub fn text(&mut self, x: f64, y: f64, s: &str, anchor: &str, size: f64, fill: &str) {
        let _ = write!(
            self.body,
            r#"<text x="{x:.1}" y="{y:.1}" text-anchor="{anchor}" font-size="{size}" fill="{fill}">{}</text>"#,
            esc(s)
        );
    }

    pub fn polyline(&mut self, points: &[(f64, f64)], stroke: &str, width: f64) {
        let pts: Vec<String> = points.iter().map(|(x, y)| format!("{x:.1},{y:.1}")).collect();
        let _ = write!(
            self.body,
            r#"<polyline points="{}" fill="none" stroke="{stroke}" stroke-width="{width}"/>"#,
            pts.join(" ")
        );
    }

    pub fn circle(&mut self, x: f64, y: f64, r: f64, fill: &str, title: &str) {
        let _ = write!(
            self.body,
            r#"<circle cx="{x:.1}" cy="{y:.1}" r="{r}" fill="{fill}"><title>{}</title></circle>"#,
            esc(title)
        );
    }

    pub fn finish(self) -> String {
        format!(
            r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-family="system-ui, sans-serif">{}</svg>"#,
            self.body,
            w = self.width,
            h = self.height
        )
    }
}

/// A log10 scale mapping `[lo, hi]` onto `[x0, x1]`, with decade ticks.
pub struct LogScale {
    pub lo: f64,
    pub hi: f64,
    pub x0: f64,
    pub x1: f64,
}

impl LogScale {
    /// A scale covering `values` (positive), widened to whole decades.
    pub fn covering(values: impl IntoIterator<Item = f64>, x0: f64, x1: f64) -> Self {
        let (mut lo, mut hi) = (f64::INFINITY, 0.0f64);
        for v in values.into_iter().filter(|v| *v > 0.0 && v.is_finite()) {
            lo = lo.min(v);
            hi = hi.max(v);
        }
        if !lo.is_finite() {
            (lo, hi) = (1.0, 10.0);
        }
        let lo = 10f64.powf(lo.log10().floor());
        let hi = 10f64.powf(hi.log10().ceil()).max(lo * 10.0);
        Self { lo, hi, x0, x1 }
    }

    pub fn at(&self, v: f64) -> f64 {
        let t = (v.max(self.lo).log10() - self.lo.log10()) / (self.hi.log10() - self.lo.log10());
        self.x0 + t * (self.x1 - self.x0)
    }

    /// Decades from `lo` to `hi`.
    pub fn ticks(&self) -> Vec<f64> {
        let mut t = vec![];
        let mut v = self.lo;
        while v <= self.hi * 1.0001 {
            t.push(v);
            v *= 10.0;
        }
        t
    }
}

/// A tick label: `0.01`, `1`, `1000`.
pub fn tick_label(v: f64) -> String {
    if v >= 1.0 { format!("{v:.0}") } else { format!("{v}") }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scales_and_escaping() {
        let s = LogScale::covering([0.5, 20.0], 0.0, 300.0);
        assert_eq!((s.lo, s.hi), (0.1, 100.0));
        assert!((s.at(1.0) - 100.0).abs() < 1e-9);
        assert_eq!(s.ticks().len(), 4);
        assert_eq!(esc("a<b & \"c\""), "a&lt;b &amp; &quot;c&quot;");
        let mut svg = Svg::new(10.0, 10.0);
        svg.text(1.0, 1.0, "<x>", "start", 10.0, "#000");
        assert!(svg.finish().contains("&lt;x&gt;"));
    }
}
