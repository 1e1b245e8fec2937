import Foundation

/// What inference found in a file (DESIGN §18): the entity to declare, and
/// why each decision was taken. ``toml()`` prints it to paste into
/// `depot.toml`, ``json()`` as one document.
public struct Inference: Sendable {
    public struct InferredField: Sendable {
        /// The field's name: the column's, made valid and unique.
        public var name: String
        /// The column's name in the file (or `""` without a header).
        public var column: String
        public var type: FieldType
        public var isOptional: Bool
        /// Nulls by spelling (`""` for an empty cell).
        public var nulls: [String: Int]
        /// The last value that widened the type, if any.
        public var evidence: Evidence?
        /// Values that are not null.
        public var values: Int

        public var declaration: String { type.rawValue + (isOptional ? "?" : "") }
    }

    /// `type` held until `line`, where `value` widened it.
    public struct Evidence: Sendable {
        public var type: FieldType
        public var line: Int
        public var value: String
    }

    /// A record the import would reject, with its line.
    public struct Problem: Sendable {
        public var line: Int
        public var reason: String
    }

    public var format: ImportOptions.Format
    /// The dialect of a CSV or TSV file.
    public var dialect: Dialect?
    /// `utf-8`, `utf-8-bom` or `latin-1`.
    public var encoding: String
    /// `lf`, `crlf`, `cr`, `mixed` or `none`.
    public var lineEnds: String
    public var entity: String
    public var fields: [InferredField]
    /// Unique, never-null fields (or pairs, or triples), the likeliest
    /// identifier first; empty when none is, and ``identifier`` is `_key`.
    public var identifierCandidates: [[String]]
    /// The records read.
    public var rows: Int
    /// The first records that do not fit (ragged, malformed), and how many.
    public var problems: [Problem]
    public var problemCount: Int

    /// The identifier: the first candidate, or `_key` (computed from each
    /// record's values) when there is none.
    public var identifier: [String] { identifierCandidates.first ?? [Inference.computedKey] }

    /// The identifier field computed from a record's values when no field is unique.
    public static let computedKey = "_key"

    /// Columns whose name had to change, to their field.
    public var renamed: [(column: String, field: String)] {
        dialect?.header == false ? [] : fields.filter { $0.column != $0.name }.map { ($0.column, $0.name) }
    }

    /// Null spellings other than an empty cell, met in typed fields: what
    /// an import must read as null.
    public var nullSpellings: [String] {
        var all = Set<String>()
        for f in fields { for s in f.nulls.keys where !s.isEmpty { all.insert(s) } }
        return all.sorted()
    }

    // MARK: what an import needs

    /// The entity to create: the fields in the file's order (and `_key`
    /// when nothing is unique), the identifier.
    ///
    /// - Throws: ``DepotError/Code/invalidSchema`` if the names do not make one.
    public func entitySchema(name: String? = nil) throws -> EntitySchema {
        var declared = fields.map { Field(name: $0.name, type: $0.type, isOptional: $0.isOptional) }
        if identifierCandidates.isEmpty { declared.append(Field(name: Inference.computedKey, type: .string)) }
        return try EntitySchema(name: name ?? entity, fields: declared, identifier: identifier)
    }

    /// How to import the file into ``entitySchema(name:)``: its dialect, the
    /// renamed columns, the null spellings, its encoding.
    public var importOptions: ImportOptions {
        var options = ImportOptions(format: format)
        if let d = dialect {
            options.delimiter = d.delimiter
            options.quote = d.quote == UInt8(ascii: "\"") ? nil : d.quote
            options.escape = d.escape
            options.skipInitialSpace = d.skipInitialSpace
            options.lenientQuotes = d.lenientQuotes
            options.header = d.header
        }
        for f in fields where f.column != f.name && dialect?.header != false { options.columnFields[f.column] = f.name }
        options.nulls = nullSpellings
        options.latin1 = encoding == "latin-1"
        return options
    }

    // MARK: JSON

    /// The document of DESIGN §18, keys in a fixed order, fields in the
    /// file's; with `toml`, ``toml()`` too (the answer of `POST /v1/infer`).
    public func json(toml withTOML: Bool = false) -> String {
        var o = "{"
        o += "\"format\": \(JSONText.quoted(format.rawValue)), \"dialect\": "
        if let d = dialect {
            o += "{\"delimiter\": \(JSONText.quoted(d.delimiter == 0x09 ? "\t" : String(UnicodeScalar(d.delimiter))))"
            o += ", \"quote\": \(JSONText.quoted(String(UnicodeScalar(d.quote))))"
            o += ", \"escape\": \(d.escape.map { JSONText.quoted(String(UnicodeScalar($0))) } ?? "null")"
            o += ", \"header\": \(d.header), \"quotes\": \(d.lenientQuotes ? "\"lenient\"" : "\"strict\"")"
        } else {
            o += "{\"delimiter\": null, \"quote\": null, \"escape\": null, \"header\": null"
        }
        o += ", \"encoding\": \(JSONText.quoted(encoding)), \"line_ends\": \(JSONText.quoted(lineEnds))"
        o += ", \"skip_initial_space\": \(dialect?.skipInitialSpace ?? false)}"
        o += ", \"entity\": {\"name\": \(JSONText.quoted(entity)), \"identifier\": "
        o += "[" + identifier.map(JSONText.quoted).joined(separator: ", ") + "], \"fields\": {"
        var declared = fields.map { "\(JSONText.quoted($0.name)): \(JSONText.quoted($0.declaration))" }
        if identifierCandidates.isEmpty { declared.append("\(JSONText.quoted(Inference.computedKey)): \"string\"") }
        o += declared.joined(separator: ", ") + "}}"
        o += ", \"identifier_candidates\": ["
        o += identifierCandidates.map { "[" + $0.map(JSONText.quoted).joined(separator: ", ") + "]" }.joined(
            separator: ", ")
        o += "], \"renamed\": {"
        o += renamed.map { "\(JSONText.quoted($0.column)): \(JSONText.quoted($0.field))" }.joined(separator: ", ")
        o += "}, \"nulls\": {"
        o += fields.filter { !$0.nulls.isEmpty }.map { f in
            JSONText.quoted(f.name) + ": {"
                + f.nulls.sorted { $0.key < $1.key }.map { "\(JSONText.quoted($0.key)): \($0.value)" }.joined(
                    separator: ", ") + "}"
        }.joined(separator: ", ")
        o += "}, \"evidence\": {"
        o += fields.compactMap { f in
            f.evidence.map {
                "\(JSONText.quoted(f.name)): {\"type\": \(JSONText.quoted($0.type.rawValue)), \"line\": \($0.line), "
                    + "\"value\": \(JSONText.quoted($0.value))}"
            }
        }.joined(separator: ", ")
        o += "}, \"rows\": \(rows), \"problems\": ["
        o += problems.map { "{\"line\": \($0.line), \"reason\": \(JSONText.quoted($0.reason))}" }.joined(
            separator: ", ")
        o += "], \"problem_count\": \(problemCount), \"columns\": ["
        var columns = fields.map {
            "{\"column\": \(JSONText.quoted($0.column)), \"field\": \(JSONText.quoted($0.name)), "
                + "\"type\": \(JSONText.quoted($0.declaration))}"
        }
        if identifierCandidates.isEmpty {
            columns.append(
                "{\"column\": \"\", \"field\": \(JSONText.quoted(Inference.computedKey)), \"type\": \"string\"}")
        }
        o += columns.joined(separator: ", ") + "]"
        if withTOML { o += ", \"toml\": \(JSONText.quoted(toml()))" }
        return o + "}"
    }

    // MARK: TOML

    /// A `[[store.entity]]` to paste, each decision's evidence a comment.
    public func toml() -> String {
        var lines: [String] = []
        var what = "\(Self.thousands(rows)) records, \(format.rawValue.uppercased())"
        if let d = dialect {
            what += ", delimiter \(TOMLText.quoted(d.delimiterText == "\\t" ? "\t" : d.delimiterText))"
            what += ", quote \(d.quote == 0x22 ? "'\"'" : "\"'\"")"
            if d.escape != nil { what += ", quotes escaped by a backslash" }
            what += d.header ? ", a header row" : ", no header row"
            if d.skipInitialSpace { what += ", a space after each delimiter" }
            if d.lenientQuotes { what += ", quotes inside unquoted fields (import with quotes = \"lenient\")" }
        }
        what += ", \(encoding), line ends \(lineEnds)"
        lines.append("# Inferred from \(what).")
        if problemCount > 0 {
            lines.append("# \(Self.thousands(problemCount)) records do not fit and an import rejects them:")
            for p in problems.prefix(5) { lines.append("#   line \(Self.thousands(p.line)): \(p.reason)") }
        }
        let flags = importFlags
        if !flags.isEmpty {
            lines.append(
                "# Import it with: depotctl import FILE --store STORE --entity \(entity) \(flags.joined(separator: " "))"
            )
            lines.append("# or, in a [[watch]]: \(watchSettings.joined(separator: ", "))")
        }
        lines.append("[[store.entity]]")
        lines.append("name = \(TOMLText.quoted(entity))")
        if identifierCandidates.isEmpty {
            lines.append("# No field, pair or triple of fields is unique and never null: the identifier")
            lines.append("# _key is computed from each record's values, so importing the file again changes nothing.")
        } else if identifierCandidates.count > 1 {
            let others = identifierCandidates.dropFirst().prefix(5).map { key in
                key.count == 1 ? key[0] : "(" + key.joined(separator: ", ") + ")"
            }
            lines.append("# Also unique and never null: \(others.joined(separator: ", ")).")
        }
        let id = identifier
        lines.append(
            "identifier = "
                + (id.count == 1 ? TOMLText.quoted(id[0]) : "[" + id.map(TOMLText.quoted).joined(separator: ", ") + "]")
        )
        lines.append("  [store.entity.fields]")
        let width = (fields.map { TOMLText.key($0.name).count } + [Inference.computedKey.count]).max() ?? 0
        for f in fields {
            var line = "  " + TOMLText.key(f.name).padding(toLength: width, withPad: " ", startingAt: 0)
            line += " = " + TOMLText.quoted(f.declaration)
            var notes: [String] = []
            if f.column != f.name, dialect?.header != false { notes.append("column \(TOMLText.quoted(f.column))") }
            if let e = f.evidence {
                notes.append("\(e.type.rawValue) until line \(Self.thousands(e.line)) (\(JSONText.quoted(e.value)))")
            }
            if !f.nulls.isEmpty {
                notes.append(
                    "null: "
                        + f.nulls.sorted { $0.key < $1.key }.map {
                            "\($0.key.isEmpty ? "empty" : JSONText.quoted($0.key)) × \(Self.thousands($0.value))"
                        }.joined(separator: ", "))
            }
            if f.values == 0 { notes.append("no value in the file") }
            if !notes.isEmpty { line += "  # " + notes.joined(separator: "; ") }
            lines.append(line)
        }
        if identifierCandidates.isEmpty {
            lines.append(
                "  " + Inference.computedKey.padding(toLength: width, withPad: " ", startingAt: 0) + " = \"string\"")
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// The `depotctl import` flags that read the file as inferred (shell-quoted).
    public var importFlags: [String] {
        func shell(_ s: String) -> String {
            s.allSatisfy { $0.isLetter || $0.isNumber || "_-.,/:=".contains($0) } && !s.isEmpty
                ? s : "'" + s.replacingOccurrences(of: "'", with: "'\\''") + "'"
        }
        let o = importOptions
        var out: [String] = []
        if let d = o.delimiter, d != (format == .tsv ? 0x09 : UInt8(ascii: ",")) {
            out.append("--delimiter " + shell(d == 0x09 ? "\\t" : String(UnicodeScalar(d))))
        }
        if let q = o.quote { out.append("--quote " + shell(String(UnicodeScalar(q)))) }
        if let e = o.escape { out.append("--escape " + shell(String(UnicodeScalar(e)))) }
        if !o.header { out.append("--no-header") }
        if o.lenientQuotes { out.append("--quotes lenient") }
        if o.skipInitialSpace { out.append("--skip-initial-space") }
        if !o.nulls.isEmpty { out.append("--nulls " + shell(o.nulls.joined(separator: ","))) }
        if o.latin1 { out.append("--encoding latin-1") }
        for (column, field) in o.columnFields.sorted(by: { $0.key < $1.key }) {
            out.append("--column " + shell("\(column)=\(field)"))
        }
        return out
    }

    /// The same settings as ``importFlags``, as a `[[watch]]` takes them.
    public var watchSettings: [String] {
        let o = importOptions
        var out: [String] = []
        if let d = o.delimiter, d != (format == .tsv ? 0x09 : UInt8(ascii: ",")) {
            out.append("delimiter = " + TOMLText.quoted(d == 0x09 ? "\t" : String(UnicodeScalar(d))))
        }
        if let q = o.quote { out.append("quote = " + TOMLText.quoted(String(UnicodeScalar(q)))) }
        if let e = o.escape { out.append("escape = " + TOMLText.quoted(String(UnicodeScalar(e)))) }
        if !o.header { out.append("header = false") }
        if o.lenientQuotes { out.append("quotes = \"lenient\"") }
        if o.skipInitialSpace { out.append("skip_initial_space = true") }
        if !o.nulls.isEmpty { out.append("nulls = [" + o.nulls.map(TOMLText.quoted).joined(separator: ", ") + "]") }
        if o.latin1 { out.append("encoding = \"latin-1\"") }
        if !o.columnFields.isEmpty {
            let pairs = o.columnFields.sorted { $0.key < $1.key }.map {
                "\(TOMLText.quoted($0.key)) = \(TOMLText.quoted($0.value))"
            }
            out.append("columns = { " + pairs.joined(separator: ", ") + " }")
        }
        return out
    }

    static func thousands(_ n: Int) -> String {
        let s = String(n.magnitude)
        var out = ""
        for (i, c) in s.enumerated() {
            if i > 0, (s.count - i) % 3 == 0 { out.append(",") }
            out.append(c)
        }
        return (n < 0 ? "-" : "") + out
    }
}

/// TOML's basic strings and keys.
enum TOMLText {
    static func quoted(_ s: String) -> String { JSONText.quoted(s) }

    /// A bare key when it is one, else a quoted key.
    static func key(_ s: String) -> String {
        let bare =
            !s.isEmpty
            && s.unicodeScalars.allSatisfy { c in
                (c >= "a" && c <= "z") || (c >= "A" && c <= "Z") || (c >= "0" && c <= "9") || c == "_" || c == "-"
            }
        return bare ? s : quoted(s)
    }
}

/// Names made valid: a field's from a column's, an entity's from a file's.
enum FieldNames {
    /// Each column's field name: letters, digits and `_` (others become `_`),
    /// not starting with a digit, not reserved, unique without regard to
    /// case (a repeat gets `_2`, `_3`…), `field_N` for an empty one.
    static func make(_ columns: [String]) -> [String] {
        let cleaned = columns.enumerated().map { clean($1, position: $0 + 1) }
        var taken = Set<String>()
        var out = Array(repeating: "", count: columns.count)
        // Valid names are kept first (the first of a repeat), so that a
        // renamed column never takes the name another has as it is.
        for (c, name) in cleaned.enumerated() where name == columns[c] && taken.insert(name.lowercased()).inserted {
            out[c] = name
        }
        for c in columns.indices where out[c].isEmpty {
            var name = cleaned[c]
            var n = 2
            while taken.contains(name.lowercased()) {
                name = "\(cleaned[c])_\(n)"
                n += 1
            }
            taken.insert(name.lowercased())
            out[c] = name
        }
        return out
    }

    static func clean(_ column: String, position: Int) -> String {
        var out = ""
        var lastUnderscore = false
        for c in column.trimmingWhitespace().unicodeScalars {
            if c.properties.isAlphabetic || (c >= "0" && c <= "9") {
                out.unicodeScalars.append(c)
                lastUnderscore = false
            } else if !lastUnderscore {
                out.append("_")
                lastUnderscore = true
            }
        }
        while out.hasSuffix("_") && out.count > 1 && !column.hasSuffix("_") { out.removeLast() }
        while out.hasPrefix("_") && out.count > 1 && !column.hasPrefix("_") { out.removeFirst() }
        if out.isEmpty || out == "_" { return "field_\(position)" }
        if let f = out.unicodeScalars.first, f >= "0" && f <= "9" { out = "_" + out }
        let lower = out.lowercased()
        if lower == "rowid" || lower.hasPrefix("depot_") || lower == Inference.computedKey { out += "_" }
        return out
    }

    /// An entity's name from a file's: its stem, made valid, capitalized
    /// (`trips.csv` → `Trips`).
    static func entity(from fileName: String) throws -> String {
        var stem = fileName.split(separator: "/").last.map(String.init) ?? fileName
        if let dot = stem.firstIndex(of: "."), dot != stem.startIndex { stem = String(stem[..<dot]) }
        var name = clean(stem, position: 1)
        if name.hasPrefix("field_") { name = "Data" }
        if name.hasPrefix("_") { name = "Data" + name }
        return name.prefix(1).uppercased() + name.dropFirst()
    }
}
