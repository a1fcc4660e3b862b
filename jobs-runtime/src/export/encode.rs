//! A page's rows as the bytes of one part, and a part's bytes back as rows: CSV (RFC 4180,
//! `\n` line ends, cells that a spreadsheet would run as a formula neutralised) and JSON lines.
//! Every refusal names the column, never the value.

use super::{Cell, Format, Row};
use crate::error::{ErrorCode, JobError};

/// The characters a spreadsheet reads as the start of a formula (and `'`, the neutraliser
/// itself, so a neutralised cell reads back unambiguously).
const FORMULA_STARTS: [char; 7] = ['=', '+', '-', '@', '\t', '\r', '\''];

/// Encodes a page into `out`, the header first when `header` is set. Stops with
/// `X_EXPORT_PART_TOO_LARGE` as soon as `out` passes `max_bytes`, so a part never holds more
/// than the bound and one row in memory.
pub(super) fn encode_page(
    format: Format,
    columns: &[String],
    rows: impl IntoIterator<Item = Row>,
    header: bool,
    max_bytes: usize,
    part: u64,
    out: &mut Vec<u8>,
) -> Result<u64, JobError> {
    let too_large = |len: usize| {
        JobError::new(
            ErrorCode::ExportPartTooLarge,
            format!(
                "part {part} of the export encodes to more than its max_part_bytes of {max_bytes} \
                 bytes (at least {len})"
            ),
        )
    };
    if header && format == Format::Csv {
        let cells: Vec<Cell> = columns.iter().map(|c| Cell::Text(c.clone())).collect();
        csv_line(&cells, out);
    }
    if out.len() > max_bytes {
        return Err(too_large(out.len()));
    }
    let index = ColumnIndex::new(columns);
    let mut count = 0u64;
    for row in rows {
        let cells = ordered(&index, row)?;
        match format {
            Format::Csv => csv_line(&cells, out),
            Format::JsonLines => json_line(columns, &cells, out),
        }
        count += 1;
        if out.len() > max_bytes {
            return Err(too_large(out.len()));
        }
    }
    Ok(count)
}

/// Where each column sits: a scan over a few columns, a map over many.
enum ColumnIndex<'a> {
    Few(&'a [String]),
    Many(std::collections::HashMap<&'a str, usize>),
}

impl<'a> ColumnIndex<'a> {
    fn new(columns: &'a [String]) -> Self {
        if columns.len() <= 16 {
            ColumnIndex::Few(columns)
        } else {
            ColumnIndex::Many(
                columns
                    .iter()
                    .enumerate()
                    .map(|(i, c)| (c.as_str(), i))
                    .collect(),
            )
        }
    }

    fn len(&self) -> usize {
        match self {
            ColumnIndex::Few(columns) => columns.len(),
            ColumnIndex::Many(map) => map.len(),
        }
    }

    fn position(&self, column: &str) -> Option<usize> {
        match self {
            ColumnIndex::Few(columns) => columns.iter().position(|c| c == column),
            ColumnIndex::Many(map) => map.get(column).copied(),
        }
    }
}

/// The row's cells in column order (an absent column is null), or the refusal naming the
/// first column that is not declared, given twice, or holds a number that is not finite.
fn ordered(columns: &ColumnIndex<'_>, row: Row) -> Result<Vec<Cell>, JobError> {
    let mut cells: Vec<Option<Cell>> = vec![None; columns.len()];
    for (column, cell) in row.into_cells() {
        let Some(at) = columns.position(&column) else {
            return Err(row_invalid(&column, "is not one of the export's columns"));
        };
        if cells[at].is_some() {
            return Err(row_invalid(&column, "is given twice in one row"));
        }
        if let Cell::Float(f) = cell {
            if !f.is_finite() {
                return Err(row_invalid(
                    &column,
                    "holds a number that is not finite (NaN or an infinity)",
                ));
            }
        }
        cells[at] = Some(cell);
    }
    Ok(cells.into_iter().map(|c| c.unwrap_or(Cell::Null)).collect())
}

pub(super) fn row_invalid(column: &str, what: &str) -> JobError {
    JobError::new(
        ErrorCode::ExportRowInvalid,
        format!("the column `{}` {what}", printable(column)),
    )
}

/// A column name as an error shows it: control characters escaped, at most 64 characters.
fn printable(column: &str) -> String {
    column
        .chars()
        .take(64)
        .flat_map(char::escape_debug)
        .collect()
}

fn csv_line(cells: &[Cell], out: &mut Vec<u8>) {
    for (i, cell) in cells.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        match cell {
            Cell::Null => {}
            Cell::Bool(b) => out.extend_from_slice(if *b { b"true" } else { b"false" }),
            Cell::Int(n) => out.extend_from_slice(n.to_string().as_bytes()),
            Cell::Float(f) => out.extend_from_slice(float_text(*f).as_bytes()),
            Cell::Text(text) => csv_text(text, out),
        }
    }
    out.push(b'\n');
}

/// A finite float as the shortest text that reads back as it (`1.0` stays a float: `1.0`).
fn float_text(f: f64) -> String {
    let text = f.to_string();
    if text.contains(['.', 'e', 'E']) {
        text
    } else {
        format!("{text}.0")
    }
}

/// A text cell: neutralised when it starts like a formula (a `'` in front), quoted when it
/// holds a separator, a quote or a line break, or is empty (so it reads back as text, not null).
fn csv_text(text: &str, out: &mut Vec<u8>) {
    let neutralise = text.starts_with(FORMULA_STARTS);
    let quote = text.is_empty() || text.contains([',', '"', '\n', '\r']);
    if quote {
        out.push(b'"');
    }
    if neutralise {
        out.push(b'\'');
    }
    for byte in text.bytes() {
        if byte == b'"' {
            out.push(b'"');
        }
        out.push(byte);
    }
    if quote {
        out.push(b'"');
    }
}

fn json_line(columns: &[String], cells: &[Cell], out: &mut Vec<u8>) {
    out.push(b'{');
    for (i, (column, cell)) in columns.iter().zip(cells).enumerate() {
        if i > 0 {
            out.push(b',');
        }
        let key = serde_json::to_string(column).unwrap_or_default();
        out.extend_from_slice(key.as_bytes());
        out.push(b':');
        let value = match cell {
            Cell::Null => "null".to_string(),
            Cell::Bool(b) => b.to_string(),
            Cell::Int(n) => n.to_string(),
            Cell::Float(f) => float_text(*f),
            Cell::Text(text) => serde_json::to_string(text).unwrap_or_default(),
        };
        out.extend_from_slice(value.as_bytes());
    }
    out.extend_from_slice(b"}\n");
}

/// Reads one part back: its rows, each holding the manifest's columns in order. Part 0 of a
/// CSV export starts with the header, which must be the manifest's columns.
pub(super) fn decode_part(
    format: Format,
    columns: &[String],
    bytes: &[u8],
    header: bool,
    part: u64,
) -> Result<Vec<Row>, JobError> {
    let text = std::str::from_utf8(bytes).map_err(|_| part_invalid(part, "is not UTF-8"))?;
    if !text.is_empty() && !text.ends_with('\n') {
        return Err(part_invalid(part, "does not end with a line break"));
    }
    match format {
        Format::Csv => decode_csv(columns, text, header, part),
        Format::JsonLines => decode_json_lines(columns, text, part),
    }
}

fn part_invalid(part: u64, what: &str) -> JobError {
    JobError::new(
        ErrorCode::ExportRowInvalid,
        format!("part {part} of the export {what}"),
    )
}

/// One CSV field as read: its text and whether it was quoted (an unquoted empty field is null).
struct Field {
    text: String,
    quoted: bool,
}

fn decode_csv(
    columns: &[String],
    text: &str,
    header: bool,
    part: u64,
) -> Result<Vec<Row>, JobError> {
    let mut records = csv_records(text).map_err(|what| part_invalid(part, what))?;
    if header {
        if records.is_empty() {
            return Err(part_invalid(part, "has no header line"));
        }
        let names: Vec<String> = records
            .remove(0)
            .into_iter()
            .map(|f| un_neutralise(f.text))
            .collect();
        for name in &names {
            if !columns.contains(name) {
                return Err(row_invalid(
                    name,
                    "of the part's header is not in its manifest",
                ));
            }
        }
        if names != columns {
            return Err(part_invalid(
                part,
                "has a header other than its manifest's columns",
            ));
        }
    }
    records
        .into_iter()
        .map(|fields| {
            if fields.len() != columns.len() {
                return Err(part_invalid(
                    part,
                    "has a line whose field count is not the column count",
                ));
            }
            let mut row = Row::new();
            for (column, field) in columns.iter().zip(fields) {
                let cell = if field.text.is_empty() && !field.quoted {
                    Cell::Null
                } else {
                    Cell::Text(un_neutralise(field.text))
                };
                row = row.set(column.clone(), cell);
            }
            Ok(row)
        })
        .collect()
}

/// Takes back the `'` the export put before a text that starts like a formula.
fn un_neutralise(text: String) -> String {
    match text.strip_prefix('\'') {
        Some(rest) if rest.starts_with(FORMULA_STARTS) => rest.to_string(),
        _ => text,
    }
}

/// RFC 4180 records, each ended by `\n` (or `\r\n`).
fn csv_records(text: &str) -> Result<Vec<Vec<Field>>, &'static str> {
    let mut records = Vec::new();
    let mut fields = Vec::new();
    let mut field = Field {
        text: String::new(),
        quoted: false,
    };
    let mut chars = text.chars().peekable();
    let mut in_quotes = false;
    let mut at_start = true;
    while let Some(c) = chars.next() {
        if in_quotes {
            if c == '"' {
                if chars.peek() == Some(&'"') {
                    chars.next();
                    field.text.push('"');
                } else {
                    in_quotes = false;
                }
            } else {
                field.text.push(c);
            }
            continue;
        }
        match c {
            '"' if at_start => {
                in_quotes = true;
                field.quoted = true;
                at_start = false;
            }
            '"' => return Err("has a quote inside an unquoted field"),
            ',' => {
                fields.push(std::mem::replace(
                    &mut field,
                    Field {
                        text: String::new(),
                        quoted: false,
                    },
                ));
                at_start = true;
            }
            '\r' if chars.peek() == Some(&'\n') => {}
            '\n' => {
                fields.push(std::mem::replace(
                    &mut field,
                    Field {
                        text: String::new(),
                        quoted: false,
                    },
                ));
                records.push(std::mem::take(&mut fields));
                at_start = true;
            }
            other => {
                if field.quoted {
                    return Err("has text after a quoted field's closing quote");
                }
                field.text.push(other);
                at_start = false;
            }
        }
    }
    if in_quotes {
        return Err("ends inside a quoted field");
    }
    Ok(records)
}

fn decode_json_lines(columns: &[String], text: &str, part: u64) -> Result<Vec<Row>, JobError> {
    let index = ColumnIndex::new(columns);
    text.lines()
        .map(|line| {
            let object: serde_json::Map<String, serde_json::Value> = serde_json::from_str(line)
                .map_err(|_| part_invalid(part, "has a line that is not a JSON object"))?;
            let mut cells: Vec<Option<Cell>> = vec![None; columns.len()];
            for (key, value) in object {
                let Some(at) = index.position(&key) else {
                    return Err(row_invalid(
                        &key,
                        "of a line is not in the export's manifest",
                    ));
                };
                let cell = match value {
                    serde_json::Value::Null => Cell::Null,
                    serde_json::Value::Bool(b) => Cell::Bool(b),
                    serde_json::Value::String(s) => Cell::Text(s),
                    serde_json::Value::Number(n) => match n.as_i64() {
                        Some(i) => Cell::Int(i),
                        None => Cell::Float(n.as_f64().unwrap_or(f64::NAN)),
                    },
                    _ => return Err(row_invalid(&key, "holds an array or an object, not a cell")),
                };
                cells[at] = Some(cell);
            }
            let mut row = Row::new();
            for (column, cell) in columns.iter().zip(cells) {
                row = row.set(column.clone(), cell.unwrap_or(Cell::Null));
            }
            Ok(row)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cols(names: &[&str]) -> Vec<String> {
        names.iter().map(|s| s.to_string()).collect()
    }

    fn encode(format: Format, rows: Vec<Row>, header: bool) -> Result<String, JobError> {
        let mut out = Vec::new();
        encode_page(
            format,
            &cols(&["id", "name", "score", "ok"]),
            rows,
            header,
            usize::MAX,
            0,
            &mut out,
        )?;
        Ok(String::from_utf8(out).unwrap())
    }

    #[test]
    fn csv_quotes_neutralises_and_keeps_null_apart_from_empty_text() {
        let rows = vec![
            Row::new()
                .set("id", 1)
                .set("name", "=SUM(A1:A9)")
                .set("score", 1.5)
                .set("ok", true),
            Row::new()
                .set("id", 2)
                .set("name", "a, \"b\"\nc")
                .set("score", -3),
            Row::new().set("id", 3).set("name", ""),
            Row::new().set("id", 4).set("name", "'quoted"),
        ];
        let text = encode(Format::Csv, rows, true).unwrap();
        assert_eq!(
            text,
            "id,name,score,ok\n1,'=SUM(A1:A9),1.5,true\n2,\"a, \"\"b\"\"\nc\",-3,\n3,\"\",,\n4,''quoted,,\n"
        );
        let back = decode_part(
            Format::Csv,
            &cols(&["id", "name", "score", "ok"]),
            text.as_bytes(),
            true,
            0,
        )
        .unwrap();
        assert_eq!(back[0].get("name"), Some(&Cell::Text("=SUM(A1:A9)".into())));
        assert_eq!(back[1].get("name"), Some(&Cell::Text("a, \"b\"\nc".into())));
        assert_eq!(back[1].get("ok"), Some(&Cell::Null));
        assert_eq!(back[2].get("name"), Some(&Cell::Text(String::new())));
        assert_eq!(back[3].get("name"), Some(&Cell::Text("'quoted".into())));
    }

    #[test]
    fn every_formula_start_is_neutralised() {
        for start in ["=", "+", "-", "@", "\t", "\r"] {
            let text = encode(
                Format::Csv,
                vec![Row::new().set("name", format!("{start}1"))],
                false,
            )
            .unwrap();
            assert!(text.contains(&format!("'{start}1")), "{text:?}");
        }
        // Numbers are not text: a negative number stays a number.
        let text = encode(Format::Csv, vec![Row::new().set("score", -1)], false).unwrap();
        assert_eq!(text, ",,-1,\n");
    }

    #[test]
    fn json_lines_keep_the_types_and_the_column_order() {
        let rows = vec![Row::new().set("ok", false).set("id", 7).set("score", 0.25)];
        let text = encode(Format::JsonLines, rows, true).unwrap();
        assert_eq!(
            text,
            "{\"id\":7,\"name\":null,\"score\":0.25,\"ok\":false}\n"
        );
        let back = decode_part(
            Format::JsonLines,
            &cols(&["id", "name", "score", "ok"]),
            text.as_bytes(),
            false,
            3,
        )
        .unwrap();
        assert_eq!(back[0].get("id"), Some(&Cell::Int(7)));
        assert_eq!(back[0].get("score"), Some(&Cell::Float(0.25)));
    }

    #[test]
    fn refusals_name_the_column_and_never_the_value() {
        let e = encode(Format::Csv, vec![Row::new().set("secret", "hunter2")], true).unwrap_err();
        assert!(e.is(ErrorCode::ExportRowInvalid));
        assert!(e.to_string().contains("`secret`"), "{e}");
        assert!(!e.to_string().contains("hunter2"), "{e}");
        let e = encode(Format::Csv, vec![Row::new().set("score", f64::NAN)], true).unwrap_err();
        assert!(e.is(ErrorCode::ExportRowInvalid) && e.to_string().contains("`score`"));
        let e = encode(
            Format::Csv,
            vec![Row::new().set("id", 1).set("id", 2)],
            true,
        )
        .unwrap_err();
        assert!(e.to_string().contains("twice"), "{e}");
    }

    #[test]
    fn a_wide_export_finds_its_columns_by_map() {
        let columns: Vec<String> = (0..40).map(|i| format!("c{i}")).collect();
        let row = Row::new().set("c39", 1).set("c0", "a");
        let mut out = Vec::new();
        encode_page(Format::Csv, &columns, [row], false, usize::MAX, 0, &mut out).unwrap();
        let line = String::from_utf8(out).unwrap();
        assert!(line.starts_with("a,,") && line.ends_with(",1\n"), "{line}");
        let e = encode_page(
            Format::Csv,
            &columns,
            [Row::new().set("c40", 1)],
            false,
            usize::MAX,
            0,
            &mut Vec::new(),
        )
        .unwrap_err();
        assert!(e.to_string().contains("`c40`"), "{e}");
    }

    #[test]
    fn a_part_past_its_bound_is_refused() {
        let mut out = Vec::new();
        let rows = (0..100).map(|i| Row::new().set("id", i));
        let e = encode_page(Format::Csv, &cols(&["id"]), rows, true, 64, 2, &mut out).unwrap_err();
        assert!(e.is(ErrorCode::ExportPartTooLarge), "{e}");
        assert!(
            out.len() <= 64 + 8,
            "stopped at the bound, not after the page"
        );
    }
}
