/// How a backend paginates lists: which query parameters a request sets and which keys of the
/// response say where the list goes on.
///
/// Two kinds share one model. **Cursor** (token) pagination follows an opaque cursor
/// (`next_cursor`) or a ready-made `next` link, as the Outpost server, NationBuilder and Django REST
/// framework's `CursorPagination` do; a cursor found in a link's ``cursorParameter`` counts as the cursor.
/// **Page-number** pagination asks for `?page=N` and reads totals (`total_pages`, `total`, or
/// Django REST framework's `count`), following a `next` link when the server gives one.
/// Set a key to `nil` when the backend does not send it.
public struct PaginationStyle: Sendable, Hashable {
    /// Cursor (token) pagination or page-number pagination.
    public enum Kind: Sendable, Hashable {
        case cursor
        case pageNumber
    }

    public var kind: Kind
    /// The query parameter for the page size (`limit`, `per_page`, `page_size`), or `nil` to never send one.
    public var pageSizeParameter: String?
    /// The query parameter that carries a cursor. Default: `cursor`.
    public var cursorParameter: String
    /// The query parameter that carries a page number (1 for the first page). Default: `page`.
    public var pageParameter: String
    /// The response key of the next page's cursor.
    public var nextCursorKey: String?
    /// The response key of the previous page's cursor.
    public var previousCursorKey: String?
    /// The response key of the next page's URL (absolute, or relative to the request's URL).
    public var nextLinkKey: String?
    /// The response key of the previous page's URL.
    public var previousLinkKey: String?
    /// The response key of the current page number.
    public var pageKey: String?
    /// The response key of the page size.
    public var perPageKey: String?
    /// The response key of the number of pages.
    public var totalPagesKey: String?
    /// The response key of the number of items in the whole list.
    public var totalItemsKey: String?

    public init(
        kind: Kind,
        pageSizeParameter: String? = nil,
        cursorParameter: String = "cursor",
        pageParameter: String = "page",
        nextCursorKey: String? = nil,
        previousCursorKey: String? = nil,
        nextLinkKey: String? = nil,
        previousLinkKey: String? = nil,
        pageKey: String? = nil,
        perPageKey: String? = nil,
        totalPagesKey: String? = nil,
        totalItemsKey: String? = nil
    ) {
        self.kind = kind
        self.pageSizeParameter = pageSizeParameter
        self.cursorParameter = cursorParameter
        self.pageParameter = pageParameter
        self.nextCursorKey = nextCursorKey
        self.previousCursorKey = previousCursorKey
        self.nextLinkKey = nextLinkKey
        self.previousLinkKey = previousLinkKey
        self.pageKey = pageKey
        self.perPageKey = perPageKey
        self.totalPagesKey = totalPagesKey
        self.totalItemsKey = totalItemsKey
    }

    /// The Outpost server's cursor pagination: `?limit=N&cursor=C` →
    /// `{"results", "next_cursor", "prev_cursor", "next", "previous"}`.
    public static let outpostCursor = PaginationStyle(
        kind: .cursor, pageSizeParameter: "limit", cursorParameter: "cursor", nextCursorKey: "next_cursor",
        previousCursorKey: "prev_cursor", nextLinkKey: "next", previousLinkKey: "previous")

    /// The Outpost server's legacy page numbers: `?page=P&per_page=N` →
    /// `{"results", "page", "per_page", "total_pages", "total"}`.
    public static let outpostPageNumbers = PaginationStyle(
        kind: .pageNumber, pageSizeParameter: "per_page", pageParameter: "page", pageKey: "page",
        perPageKey: "per_page", totalPagesKey: "total_pages", totalItemsKey: "total")

    /// Django REST framework's page numbers: `?page=N&page_size=M` →
    /// `{"count", "next", "previous", "results"}`.
    public static let restFramework = PaginationStyle(
        kind: .pageNumber, pageSizeParameter: "page_size", pageParameter: "page", nextLinkKey: "next",
        previousLinkKey: "previous", totalItemsKey: "count")

    /// Django REST framework's `CursorPagination`: `?page_size=M` → `{"next", "previous", "results"}`,
    /// where `next` and `previous` are links carrying an opaque `cursor` parameter. The cursors are
    /// read from the links into ``PaginationInfo/nextCursor`` and ``PaginationInfo/previousCursor``, so
    /// a list can resume from one with ``ListRequest/cursor``. No count, no page numbers beyond the
    /// ones the pages walked.
    public static let restFrameworkCursor = PaginationStyle(
        kind: .cursor, pageSizeParameter: "page_size", cursorParameter: "cursor", nextLinkKey: "next",
        previousLinkKey: "previous")

    /// NationBuilder's token pagination: `?limit=N` → `{"results", "next", "prev"}`, where `next` and
    /// `prev` are paths carrying the tokens.
    public static let nationBuilder = PaginationStyle(
        kind: .cursor, pageSizeParameter: "limit", nextLinkKey: "next", previousLinkKey: "prev")

    /// Every response key this style reads.
    var responseKeys: [String] {
        [nextCursorKey, previousCursorKey, nextLinkKey, previousLinkKey, pageKey, perPageKey, totalPagesKey, totalItemsKey]
            .compactMap { $0 }
    }
}
