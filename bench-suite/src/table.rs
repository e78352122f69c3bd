//! Plain-text tables for the terminal.

/// Renders `rows` under `headers`; the first column is left-aligned, the
/// others right-aligned (they hold numbers).
pub fn render(headers: &[String], rows: &[Vec<String>]) -> String {
    let cols = headers.len();
    let mut width: Vec<usize> = headers.iter().map(|h| h.chars().count()).collect();
    for r in rows {
        for (w, c) in width.iter_mut().zip(r) {
            *w = (*w).max(c.chars().count());
        }
    }
    let line = |cells: &[String]| -> String {
        let mut s = String::new();
        for (i, w) in width.iter().enumerate().take(cols) {
            let c = cells.get(i).map_or("", String::as_str);
            let pad = w - c.chars().count();
            if i == 0 {
                s.push_str(c);
                s.push_str(&" ".repeat(pad));
            } else {
                s.push_str("  ");
                s.push_str(&" ".repeat(pad));
                s.push_str(c);
            }
        }
        s.trim_end().to_string()
    };
    let mut out = line(headers);
    out.push('\n');
    out.push_str(&"-".repeat(width.iter().sum::<usize>() + 2 * cols.saturating_sub(1)));
    out.push('\n');
    for r in rows {
        out.push_str(&line(r));
        out.push('\n');
    }
    out
}

/// A duration in ms with 3 significant digits.
pub fn ms(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 10.0 {
        format!("{v:.1}")
    } else if v >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_align() {
        let t = render(
            &["case".into(), "ms".into()],
            &[vec!["a".into(), "1.5".into()], vec!["bbb".into(), "12.25".into()]],
        );
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines[0], "case     ms");
        assert_eq!(lines[2], "a       1.5");
        assert_eq!(lines[3], "bbb   12.25");
        assert_eq!(ms(1234.5), "1234");
        assert_eq!(ms(0.01234), "0.012");
    }
}
