//! Reading numeric CSV tables with a header row, with errors that name the file and line.

use std::path::Path;

/// A numeric table: the rows after the header, each with the same number of columns.
#[derive(Debug)]
pub struct Table {
    pub columns: usize,
    /// Row-major values.
    pub values: Vec<f64>,
    /// The file line of each row (the header is line 1).
    pub lines: Vec<u64>,
}

impl Table {
    pub fn rows(&self) -> usize {
        self.values.len() / self.columns.max(1)
    }

    pub fn row(&self, i: usize) -> &[f64] {
        &self.values[i * self.columns..(i + 1) * self.columns]
    }
}

/// Reads `path`: a header row, then rows of finite numbers, all as wide as the header.
///
/// # Errors
/// A one-line message `file:line: what` for a missing or unreadable file, an empty table, a
/// ragged row, a non-numeric cell or a non-finite value.
pub fn read(path: &Path) -> Result<Table, String> {
    let name = path.display();
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(true)
        .flexible(true)
        .trim(csv::Trim::All)
        .from_path(path)
        .map_err(|e| format!("{name}: cannot read: {}", describe(&e)))?;
    let columns = reader
        .headers()
        .map_err(|e| format!("{name}:1: {}", describe(&e)))?
        .len();
    if columns == 0 {
        return Err(format!("{name}:1: the header row is empty"));
    }
    let mut values = Vec::new();
    let mut lines = Vec::new();
    for record in reader.records() {
        let record = record.map_err(|e| {
            let line = e.position().map_or(0, |p| p.line());
            format!("{name}:{line}: {}", describe(&e))
        })?;
        let line = record.position().map_or(0, |p| p.line());
        if record.len() != columns {
            return Err(format!(
                "{name}:{line}: expected {columns} columns as in the header, found {}",
                record.len()
            ));
        }
        for (column, cell) in record.iter().enumerate() {
            let value: f64 = cell.parse().map_err(|_| {
                format!(
                    "{name}:{line}: column {}: `{cell}` is not a number",
                    column + 1
                )
            })?;
            if !value.is_finite() {
                return Err(format!(
                    "{name}:{line}: column {}: `{cell}` is not finite",
                    column + 1
                ));
            }
            values.push(value);
        }
        lines.push(line);
    }
    if values.is_empty() {
        return Err(format!("{name}: no rows after the header"));
    }
    Ok(Table {
        columns,
        values,
        lines,
    })
}

fn describe(error: &csv::Error) -> String {
    match error.kind() {
        csv::ErrorKind::Io(io) => io.to_string(),
        _ => error.to_string(),
    }
}
