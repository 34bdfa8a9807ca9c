@_spi(OutpostInternal) import OutpostCore

extension RecordRoutes {
    /// Refuses a list that ``scans(_:)`` (a filter or a sort by fields that no declared index
    /// serves) when the caller may list more than ``unindexedListLimit`` records of the type: 400
    /// `index_required`, naming the fields to index and the command that does it. Only records the
    /// caller may list are counted, so the moment it flips tells nothing of records hidden from
    /// them; the count stops one record past the limit.
    func requireFewRecords(_ query: RecordQuery) async throws {
        let count = try await storage.countRecords(query, upTo: unindexedListLimit + 1)
        guard count > unindexedListLimit else { return }
        throw Self.indexRequired(query, limit: unindexedListLimit)
    }

    /// Whether `query` has a filter or a sort by fields that no declared index serves: a list that
    /// reads up to ``unindexedListLimit`` rows per page.
    func scans(_ query: RecordQuery) async throws -> Bool {
        let sortsByFields = query.order?.contains { if case .field = $0.source { true } else { false } } ?? false
        guard query.filter != nil || sortsByFields else { return false }
        let indexes = try await storage.recordIndexes(type: query.type)
        return !indexes.contains(where: { Self.serves($0, query) })
    }

    /// Runs `body`, the work of the list `query`, in a place of ``listScans`` when the list
    /// ``scans(_:)`` (after ``requireFewRecords(_:)``, whose count is work of the same kind); at once otherwise.
    func boundingScan<T: Sendable>(_ query: RecordQuery, address: String, _ body: () async throws -> T) async throws -> T {
        guard try await scans(query) else { return try await body() }
        return try await listScans.run(address: address) {
            try await requireFewRecords(query)
            return try await body()
        }
    }

    /// Whether `index` serves `query`, so its pages cost about the same however many records the type holds:
    ///
    /// - sorted by fields: the sort's field keys come first, all in one direction, and are, in
    ///   order, a prefix of the index's fields after those the filter pins by equality at the top
    ///   level of its `&&` (`filter=record.tag == "a"&sort=-views` is served by `tag views`, and
    ///   `sort=-views` by `views` or `views title`);
    /// - otherwise (sorted by time or id): the filter tests the index's first field at the top level of its `&&`.
    static func serves(_ index: RecordIndex, _ query: RecordQuery) -> Bool {
        let tests = query.filter?.topLevelFieldTests ?? []
        var pinned = 0
        while pinned < index.fields.count,
            tests.contains(where: { $0.field == index.fields[pinned] && RecordIndexHint($0.test)?.pinsField == true })
        {
            pinned += 1
        }
        let order = query.order ?? []
        let sortFields = leadingSortFields(order)
        let fieldKeys = order.filter { if case .field = $0.source { true } else { false } }.count
        if fieldKeys > 0 {
            guard sortFields.count == fieldKeys, Set(sortFields.map(\.descending)).count == 1 else { return false }
            let rest = index.fields.dropFirst(pinned)
            return sortFields.count <= rest.count && zip(sortFields, rest).allSatisfy { $0.field == $1 }
        }
        return tests.contains { $0.field == index.fields[0] && RecordIndexHint($0.test) != nil }
    }

    /// The field keys at the start of `order`.
    static func leadingSortFields(_ order: [RecordOrderKey]) -> [(field: String, descending: Bool)] {
        var fields: [(field: String, descending: Bool)] = []
        for key in order {
            guard case .field(let name) = key.source else { break }
            fields.append((name, key.descending))
        }
        return fields
    }

    /// 400 `index_required` for `query`, with the fields an index needs and the command that declares it.
    static func indexRequired(_ query: RecordQuery, limit: Int) -> ServerError {
        let tests = query.filter?.topLevelFieldTests ?? []
        let order = query.order ?? []
        let sortFields = leadingSortFields(order).map(\.field)
        let fieldKeys = order.filter { if case .field = $0.source { true } else { false } }.count
        var fields: [String] = []
        if fieldKeys > 0 {
            for test in tests where RecordIndexHint(test.test)?.pinsField == true && !fields.contains(test.field) {
                fields.append(test.field)
            }
            fields = Array(fields.prefix(RecordIndex.maxFields - min(sortFields.count, RecordIndex.maxFields)))
            fields += sortFields.filter { !fields.contains($0) }
            fields = Array(fields.prefix(RecordIndex.maxFields))
        } else if let test = tests.first(where: { RecordIndexHint($0.test)?.pinsField == true }) ?? tests.first {
            fields = [test.field]
        }
        var message =
            "This list needs an index: type \(query.type) holds more than \(limit) records you may list and no declared "
            + "index serves its filter or sort"
        var details: [String: JSONValue] = ["type": .string(query.type), "limit": .int(limit)]
        if fieldKeys > 0 && (sortFields.count != fieldKeys || Set(leadingSortFields(order).map(\.descending)).count > 1) {
            message +=
                ". An index serves a sort whose field keys come first and go in one direction (e.g. sort=-views,-title); "
                + "change the sort, then index its fields."
        } else if fields.isEmpty {
            message +=
                ". The filter tests no field at the top level of its && (e.g. record.views > 10 && ...), so no index can serve it; "
                + "add such a test on an indexed field, or sort by indexed fields."
        } else {
            let command = "outpost types index \(query.type) \(fields.joined(separator: " "))"
            let noun = fields.count == 1 ? "field" : "fields"
            message +=
                "; index \(noun) \(fields.joined(separator: ", ")) of type \(query.type): \(command) "
                + "(or \"indexes\": [[\(fields.map { "\"\($0)\"" }.joined(separator: ", "))]] under types.\(query.type) in the rules file)"
            details["fields"] = .array(fields.map { .string($0) })
            details["command"] = .string(command)
        }
        return ServerError.badRequest("index_required", message, details: .object(details))
    }
}
