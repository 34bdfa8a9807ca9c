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
    /// - Parameter limit: the most items to yield in all; the last page is cut to fit, and pages are
    ///   requested no larger than needed.
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
        let response = try await client.send(request, operationName: "list \(Item.self)")
        let keys = ListKeys(itemsKey: configuration.listItemsKey, metaKeys: style.responseKeys)
        let decoder = client.configuration.decoder.copy(adding: [.outpostListKeys: keys])
        let body: ListBody<Item>
        do {
            body = try Self.decode(ListBody<Item>.self, from: response, decoder: decoder, method: "GET", path: request.path)
        } catch var error as OutpostError where error.code == .decodingFailed {
            if let itemsKey = configuration.listItemsKey, error.codingPath == itemsKey,
                case .keyNotFound? = error.underlying as? DecodingError
            {
                error.message = "The list response has no '\(itemsKey)' key"
                error.suggestion = "Set EntityConfiguration.listItemsKey to the key that holds the items (nil for a bare array)"
            }
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
        var info = PaginationInfo(
            nextCursor: string(style.nextCursorKey), previousCursor: string(style.previousCursorKey),
            next: link(style.nextLinkKey), previous: link(style.previousLinkKey),
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
        let next = nextLocation(after: location, info: info, count: body.items.count, style: style)
        let previous = previousLocation(before: location, info: info, style: style)
        return Page(items: body.items, info: info, next: next, previous: previous)
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
