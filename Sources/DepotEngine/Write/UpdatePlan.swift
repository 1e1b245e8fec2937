import DepotWire
import Foundation

/// A batch update, checked and compiled once: the records it takes, the
/// constant values it sets (`set`) and the fields it computes (`compute`,
/// DESIGN §17), in one store's dialect. Checking a job at the door and
/// running it build the same plan, so that what is refused is refused
/// before anything is queued.
package struct UpdatePlan: Sendable {
    /// The records taken, with the computed values (``RowSelection/computed``).
    package let selection: RowSelection
    /// The constants: entity positions and converted values.
    package let constants: [(Int, Value)]
    /// The fields the selection's computed columns set, by position, in their order.
    package let computed: [Int]
    /// What `now()` stands for.
    package let now: String

    /// - Parameter now: what `now()` stood for when the job began (a
    ///   resumed job's); the time of the call when nil.
    /// - Throws: ``DepotError`` for an unknown field, a field both set and
    ///   computed, a field of the identifier or of a relationship computed,
    ///   an expression that does not parse or gives values the field cannot
    ///   hold (its message names the field, its position is in the expression).
    package init(
        entity: EntitySchema, schema: StoreSchema, where predicate: String?, arguments: [String: Value],
        set values: [String: Value], compute: [String: String], dialect: any SQLDialect, now: String? = nil
    ) throws {
        guard !values.isEmpty || !compute.isEmpty else {
            throw DepotError(.invalidArgument, "an update needs at least one field to set or compute")
        }
        constants = values.isEmpty ? [] : try Assignments.resolve(values, in: entity)
        let expressions = compute.sorted { $0.key < $1.key }
        var computed: [Int] = []
        for (name, _) in expressions {
            let field = try entity.field(named: name)
            if values[name] != nil {
                throw DepotError(
                    .invalidArgument, "field \(JSONText.quoted(name)) is both set and computed; give it once")
            }
            if entity.identifier.contains(name) {
                throw DepotError(
                    .invalidArgument,
                    "field \(JSONText.quoted(name)) is part of the identifier and cannot be computed")
            }
            if let r = entity.relationships.first(where: {
                entity.relationshipColumns[$0.name]?.contains(name) ?? false
            }) {
                throw DepotError(
                    .invalidArgument,
                    "field \(JSONText.quoted(name)) holds relationship \(JSONText.quoted(r.name)): "
                        + "set it to a stored record's identifier, it cannot be computed")
            }
            computed.append(entity.position(of: field.name)!)
        }
        let columns = try PredicateCompiler.compute(
            expressions.map { ($0.key, $0.value) }, where: predicate, entity: entity, schema: schema,
            arguments: arguments, dialect: dialect, now: now)
        for (column, position) in zip(columns.columns, computed) {
            try Self.check(column, fits: entity.fields[position])
        }
        self.computed = computed
        self.now = columns.now
        selection = RowSelection(entity, .matching(columns.filter), in: schema, computed: columns.columns)
    }

    /// Refuses an expression whose values the field can never hold; those
    /// it may hold are checked record by record (``convert(_:to:)``).
    package static func check(_ column: ComputedColumns.Column, fits field: Field, label: String = "compute") throws {
        let name = JSONText.quoted(field.name)
        guard let type = column.type else {
            guard field.isOptional else {
                throw DepotError(
                    .typeMismatch, "\(label) \(name): field \(name) is required, and the expression is always null")
            }
            return
        }
        let fits =
            switch field.type {
            case .int, .double: type.isNumeric
            case .string, .date: type == .string || type == .date
            case .bool: type == .bool
            case .json: type == .json
            }
        guard fits else {
            throw DepotError(
                .typeMismatch,
                "\(label) \(name): field \(name) is \(field.type.rawValue), "
                    + "but the expression gives \(type.rawValue) values")
        }
    }

    /// A computed value as `field` stores it, or why the record is refused:
    /// null in a required field, a double that is not a whole number (or an
    /// integer out of range) in an int field, text that is not a date in a date field.
    package static func convert(_ value: Value, computedAs type: FieldType?, to field: Field) -> Result<
        Value, DepotError
    > {
        if type == .int, field.type == .int, case .double = value {
            return .failure(
                DepotError(
                    .typeMismatch,
                    "field \(JSONText.quoted(field.name)) is int, and the computed value is out of "
                        + "the 64-bit range"))
        }
        do {
            return .success(try ValueConversion.convert(value, to: field))
        } catch let error as DepotError {
            return .failure(error)
        } catch {
            return .failure(DepotError(.typeMismatch, "\(error)"))
        }
    }
}

/// Where a batch update stands after a save: committed in the same
/// transaction as the save's changes, so that a resumed job goes on after
/// the last record it saved and computes none twice (DESIGN §17), even
/// when a computation changes whether a record matches its predicate.
struct UpdateCheckpoint: Codable, Sendable {
    /// After the last record visited: an SQLite store's rowid, or a
    /// PostgreSQL store's identifier (each value as text, read back by its
    /// field's type).
    var rowid: Int64?
    var identifier: [String?]?
    /// The counts so far.
    var counters: Counters
    /// The rejects file's length after the save.
    var rejectsLength: Int64
    /// What `now()` stood for when the job began.
    var now: String
    /// Whether the last save was made: a resumed job has nothing left to do.
    var done: Bool

    init(cursor: RowCursor, counters: Counters, rejectsLength: Int64, now: String, done: Bool) {
        switch cursor {
        case .start: break
        case .rowid(let r): rowid = r
        case .identifier(let values): identifier = values.map(Self.text)
        }
        self.counters = counters
        self.rejectsLength = rejectsLength
        self.now = now
        self.done = done
    }

    /// The cursor, its identifier's values typed as `entity`'s.
    func cursor(_ entity: EntitySchema) -> RowCursor { Self.cursor(rowid: rowid, identifier: identifier, entity) }

    /// A cursor kept as a rowid or as its identifier's values as text.
    static func kept(_ cursor: RowCursor) -> (rowid: Int64?, identifier: [String?]?) {
        switch cursor {
        case .start: (nil, nil)
        case .rowid(let r): (r, nil)
        case .identifier(let values): (nil, values.map(text))
        }
    }

    /// The cursor ``kept(_:)`` gave, its identifier's values typed as `entity`'s.
    static func cursor(rowid: Int64?, identifier: [String?]?, _ entity: EntitySchema) -> RowCursor {
        if let rowid { return .rowid(rowid) }
        guard let identifier else { return .start }
        return .identifier(
            zip(identifier, entity.identifierIndexes).map { text, position in
                guard let text else { return .null }
                switch entity.fields[position].type {
                case .int: return Int64(text).map(Value.int) ?? .string(text)
                case .double: return Double(text).map(Value.double) ?? .string(text)
                case .bool: return .bool(text == "true")
                case .string, .date, .json: return .string(text)
                }
            })
    }

    private static func text(_ v: Value) -> String? {
        switch v {
        case .null: nil
        case .bool(let b): b ? "true" : "false"
        case .int(let i): String(i)
        case .double(let d): "\(d)"
        case .string(let s): s
        }
    }

    func encoded() throws -> [UInt8] { Array(try JSONEncoder().encode(self)) }

    static func decode(_ bytes: [UInt8]) -> UpdateCheckpoint? {
        try? JSONDecoder().decode(UpdateCheckpoint.self, from: Data(bytes))
    }
}
