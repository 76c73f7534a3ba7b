//! A chart's data as a table: written as CSV beside the image, printed as
//! aligned columns in the terminal.

use std::path::Path;

pub struct Table {
    pub headers: Vec<&'static str>,
    pub rows: Vec<Vec<String>>,
}

impl Table {
    pub fn new(headers: Vec<&'static str>) -> Table {
        Table {
            headers,
            rows: Vec::new(),
        }
    }

    pub fn push(&mut self, row: Vec<String>) {
        assert_eq!(row.len(), self.headers.len(), "a row per column");
        self.rows.push(row);
    }

    /// Cells are numbers and plain words; anything with a comma or a quote is
    /// quoted anyway so the file stays valid CSV.
    pub fn to_csv(&self) -> String {
        let line = |cells: &mut dyn Iterator<Item = &str>| {
            cells
                .map(|c| {
                    if c.contains([',', '"', '\n']) {
                        format!("\"{}\"", c.replace('"', "\"\""))
                    } else {
                        c.to_string()
                    }
                })
                .collect::<Vec<_>>()
                .join(",")
        };
        let mut out = line(&mut self.headers.iter().copied());
        out.push('\n');
        for row in &self.rows {
            out.push_str(&line(&mut row.iter().map(String::as_str)));
            out.push('\n');
        }
        out
    }

    pub fn write_csv(&self, path: &Path) -> std::io::Result<()> {
        std::fs::write(path, self.to_csv())
    }

    /// The table for the terminal: right-aligned columns, two spaces in.
    pub fn to_text(&self) -> String {
        let widths: Vec<usize> = (0..self.headers.len())
            .map(|i| {
                self.rows
                    .iter()
                    .map(|r| r[i].len())
                    .chain(std::iter::once(self.headers[i].len()))
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let mut text = String::new();
        let mut add_row = |cells: Vec<&str>| {
            let line: Vec<String> = cells
                .iter()
                .zip(&widths)
                .map(|(c, w)| format!("{c:>w$}"))
                .collect();
            text.push_str(&format!("  {}\n", line.join("  ")));
        };
        add_row(self.headers.clone());
        for row in &self.rows {
            add_row(row.iter().map(String::as_str).collect());
        }
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_quotes_only_what_needs_it() {
        let mut t = Table::new(vec!["mode", "writes_per_min"]);
        t.push(vec!["worker".into(), "12.0".into()]);
        t.push(vec!["a,b".into(), "1".into()]);
        assert_eq!(t.to_csv(), "mode,writes_per_min\nworker,12.0\n\"a,b\",1\n");
    }
}
