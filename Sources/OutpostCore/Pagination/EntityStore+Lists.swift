import Foundation

extension EntityStore {
    /// Fetches the first page of a list (or the page or cursor the request starts at).
    ///
    /// - Throws: ``OutpostError``; ``OutpostError/Code/decodingFailed`` with the coding path (e.g.
    ///   `results[3].title`) when an item does not fit the item type.
    public func page<Item>(_ request: ListRequest<Item>) async throws -> Page<Item> {
        try await fetchPage(startLocation(for: request, limit: nil), style: style(of: request))
    }

    /// Fetches the page after `page`, or returns `nil` when `page` is the last.
    public func page<Item>(after page: Page<Item>, of request: ListRequest<Item>) async throws -> Page<Item>? {
        guard let location = page.nextLocation else { return nil }
        return try await fetchPage(location, style: style(of: request))
    }

    /// Fetches the page before `page`, or returns `nil` when `page` is the first or the server gives
    /// no way back.
    public func page<Item>(before page: Page<Item>, of request: ListRequest<Item>) async throws -> Page<Item>? {
        guard let location = page.previousLocation else { return nil }
        return try await fetchPage(location, style: style(of: request))
    }

    /// The pages of a list, fetched lazily one at a time as the loop asks for them.
    ///
    /// ```swift
    /// for try await page in store.pages(ListRequest(Person.self, pageSize: 50)) {
    ///     print(page.info.currentPage ?? 0, page.items.count)
    /// }
    /// ```
    ///
    /// Only the current page is held. When the task is cancelled, no further page is fetched and the
    /// loop throws ``OutpostError/Code/cancelled``.
    ///
    /// - Parameters:
    ///   - request: The list to walk: item type, filters, page size.
    ///   - limit: The most items to yield in all; the last page is cut to fit, and pages are
    ///     requested no larger than needed.
    public func pages<Item>(_ request: ListRequest<Item>, limit: Int? = nil) -> PageSequence<Item> {
        PageSequence(store: self, start: startLocation(for: request, limit: limit), style: style(of: request), limit: limit)
    }

    /// The items of a list, fetched lazily a page at a time; only the current page is held.
    ///
    /// ```swift
    /// for try await person in store.items(ListRequest(Person.self), limit: 500) { ... }
    /// ```
    ///
    /// When the task is cancelled, no further page is fetched and the loop throws
    /// ``OutpostError/Code/cancelled``.
    public func items<Item>(_ request: ListRequest<Item>, limit: Int? = nil) -> ItemSequence<Item> {
        ItemSequence(pages: pages(request, limit: limit))
    }

    // MARK: Internals

    func style<Item>(of request: ListRequest<Item>) -> PaginationStyle {
        request.pagination ?? configuration.pagination
    }

    func startLocation<Item>(for list: ListRequest<Item>, limit: Int?) -> PageLocation {
        let style = style(of: list)
        let origin = Request.get(configuration.collectionPath(resource: list.resourcePath), query: list.query)
        var pageSize = list.pageSize
        let fixedPages = style.kind == .pageNumber && list.page != nil
        if let limit, !fixedPages {
            if let size = pageSize {
                pageSize = min(size, max(limit, 1))
            } else if let maximum = configuration.maxPageSize {
                pageSize = min(maximum, max(limit, 1))
            }
        }
        var request = origin
        if let pageSize, let parameter = style.pageSizeParameter {
            request.query.append(URLQueryItem(name: parameter, value: String(pageSize)))
        }
        var located = PageLocation(origin: request, request: request, pageSize: pageSize)
        located.failure = list.queryErrors.sorted { $0.key < $1.key }.first.map {
            var error = $0.value
            error.method = "GET"
            error.path = OutpostError.normalizedPath(request.path)
            return error
        }
        switch list.shape {
        case nil: located.itemsKey = configuration.listItemsKey
        case .bareArray?: located.itemsKey = nil
        case .object(let key)?: located.itemsKey = key
        }
        switch style.kind {
        case .cursor:
            if let cursor = list.cursor {
                located.request.query.append(URLQueryItem(name: style.cursorParameter, value: cursor))
            } else {
                located.pageNumber = 1
                located.offset = 0
            }
        case .pageNumber:
            let number = max(list.page ?? 1, 1)
            if list.page != nil {
                located.request.query.append(URLQueryItem(name: style.pageParameter, value: String(number)))
            }
            located.pageNumber = number
        }
        return located
    }

    func fetchPage<Item: Decodable & Sendable>(_ location: PageLocation, style: PaginationStyle) async throws -> Page<Item> {
        let request = location.request
        if let failure = location.failure { throw failure }
        let response = try await client.send(request, operationName: "list \(Item.self)")
        let keys = ListKeys(itemsKey: location.itemsKey, metaKeys: style.responseKeys)
        let decoder = client.configuration.decoder.copy(adding: [.outpostListKeys: keys])
        let body: ListBody<Item>
        do {
            body =
                try ListBody<Item>.untyped(response.body, keys: keys, decoder: decoder)
                ?? Self.decode(ListBody<Item>.self, from: response, decoder: decoder, method: "GET", path: request.path)
        } catch var error as OutpostError where error.code == .decodingFailed {
            Self.explainShape(of: response, expectedItemsKey: location.itemsKey, error: &error)
            throw error
        }
        let meta = body.meta
        let requestURL = try? client.makeURL(for: request)
        func string(_ key: String?) -> String? {
            guard let key, let value = meta[key]?.stringValue, !value.isEmpty else { return nil }
            return value
        }
        func int(_ key: String?) -> Int? { key.flatMap { meta[$0]?.intValue } }
        func link(_ key: String?) -> URL? {
            string(key).flatMap { URL(string: $0, relativeTo: requestURL ?? client.configuration.baseURL)?.absoluteURL }
        }
        func cursor(in url: URL?) -> String? {
            guard style.kind == .cursor, let url else { return nil }
            let items = URLComponents(url: url, resolvingAgainstBaseURL: false)?.queryItems ?? []
            return items.first { $0.name == style.cursorParameter }?.value.flatMap { $0.isEmpty ? nil : $0 }
        }
        let next = link(style.nextLinkKey)
        let previous = link(style.previousLinkKey)
        var info = PaginationInfo(
            nextCursor: string(style.nextCursorKey) ?? cursor(in: next),
            previousCursor: string(style.previousCursorKey) ?? cursor(in: previous),
            next: next, previous: previous,
            page: int(style.pageKey) ?? location.pageNumber, perPage: int(style.perPageKey) ?? location.pageSize,
            totalPages: int(style.totalPagesKey), totalItems: int(style.totalItemsKey))
        if info.perPage == nil, info.hasNextPage, !body.items.isEmpty {
            info.perPage = body.items.count  // a full page: its size is the page size
        }
        switch style.kind {
        case .cursor:
            info.firstItemIndex = location.offset
        case .pageNumber:
            if let page = info.page, let perPage = info.perPage { info.firstItemIndex = (page - 1) * perPage }
        }
        return Page(
            items: body.items, info: info, next: nextLocation(after: location, info: info, count: body.items.count, style: style),
            previous: previousLocation(before: location, info: info, style: style))
    }

    /// Says what is wrong when a list body does not have the shape asked for: a bare array where an
    /// object with items was expected, an object where a bare array was, or no items key.
    static func explainShape(of response: ClientResponse, expectedItemsKey: String?, error: inout OutpostError) {
        let first = response.body.first { !$0.isWhitespaceByte }
        if let itemsKey = expectedItemsKey {
            if first == UInt8(ascii: "[") {
                error.message = "The list response is a bare JSON array, not an object with a '\(itemsKey)' key"
                error.suggestion =
                    "List this route with ListRequest(..., shape: .bareArray), or set EntityConfiguration.listItemsKey to nil when every list is a bare array"
            } else if error.codingPath == itemsKey, case .keyNotFound? = error.underlying as? DecodingError {
                let keys = (try? response.json())?.objectValue?.keys.sorted() ?? []
                let arrays = ((try? response.json())?.objectValue ?? [:]).filter {
                    if case .array = $0.value { true } else { false }
                }
                error.message =
                    "The list response has no '\(itemsKey)' key"
                    + (keys.isEmpty ? "" : " (its keys: \(keys.joined(separator: ", ")))")
                error.suggestion =
                    arrays.count == 1
                    ? "Set EntityConfiguration.listItemsKey (or ListRequest.shape) to \"\(arrays.keys.first ?? "")\", the key that holds an array"
                    : "Set EntityConfiguration.listItemsKey (or ListRequest.shape) to the key that holds the items"
            }
        } else if first == UInt8(ascii: "{") {
            let object = (try? response.json())?.objectValue ?? [:]
            let arrays = object.filter { if case .array = $0.value { true } else { false } }.keys.sorted()
            error.message =
                "The list response is a JSON object (keys: \(object.keys.sorted().joined(separator: ", "))), not a bare array"
            error.suggestion =
                arrays.first.map {
                    "This route is paginated: list it with ListRequest(..., shape: .object(itemsKey: \"\($0)\")) and its pagination style"
                }
                ?? "List it with a ListRequest whose shape names the key that holds the items"
        }
    }

    private func nextLocation(after location: PageLocation, info: PaginationInfo, count: Int, style: PaginationStyle)
        -> PageLocation?
    {
        var next = location
        next.pageNumber = info.page.map { $0 + 1 }
        next.offset = (info.firstItemIndex ?? location.offset).map { $0 + count }
        if let cursor = info.nextCursor {
            next.request = location.origin
            next.request.query.append(URLQueryItem(name: style.cursorParameter, value: cursor))
        } else if let url = info.next {
            next.request = Request.get(url.absoluteString)
        } else if style.kind == .pageNumber, let page = info.page, let pages = info.numberOfPages, page < pages {
            next.request = location.origin
            next.request.query.append(URLQueryItem(name: style.pageParameter, value: String(page + 1)))
        } else {
            return nil
        }
        return next
    }

    private func previousLocation(before location: PageLocation, info: PaginationInfo, style: PaginationStyle) -> PageLocation? {
        var previous = location
        previous.pageNumber = info.page.flatMap { $0 > 1 ? $0 - 1 : nil }
        if let first = info.firstItemIndex ?? location.offset, let perPage = info.perPage {
            previous.offset = first >= perPage ? first - perPage : nil
        } else {
            previous.offset = nil
        }
        if let cursor = info.previousCursor {
            previous.request = location.origin
            previous.request.query.append(URLQueryItem(name: style.cursorParameter, value: cursor))
        } else if let url = info.previous {
            previous.request = Request.get(url.absoluteString)
        } else if style.kind == .pageNumber, let page = info.page, page > 1 {
            previous.request = location.origin
            previous.request.query.append(URLQueryItem(name: style.pageParameter, value: String(page - 1)))
        } else {
            return nil
        }
        return previous
    }
}
