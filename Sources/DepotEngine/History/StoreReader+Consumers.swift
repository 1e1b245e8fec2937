import GRDB

extension Consumer {
    /// A consumer's name goes into URLs and metric labels: letters, digits,
    /// `.`, `_` and `-`, starting with a letter or digit, at most 128.
    package static func checkName(_ name: String) throws {
        let allowed = name.utf8.allSatisfy { b in
            (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A)
                || b == 0x2E || b == 0x5F || b == 0x2D
        }
        guard allowed, let first = name.utf8.first, first != 0x2E, first != 0x5F, first != 0x2D,
            name.utf8.count <= 128
        else {
            throw DepotError(
                .invalidArgument,
                "\(JSONText.quoted(name)) is not a consumer name: use 1 to 128 "
                    + "letters, digits, '.', '_' or '-', starting with a letter or a digit")
        }
    }
}
