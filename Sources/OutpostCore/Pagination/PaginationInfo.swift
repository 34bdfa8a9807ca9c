public import Foundation

/// Where one page sits in a list, for both pagination styles, with the helpers a user interface needs.
///
/// Cursor pages carry cursors and links; page-number pages carry numbers and totals. What the server
/// did not say is `nil`. ``EntityStore/pages(_:limit:)`` numbers cursor pages itself when it started
/// at the first page, so ``currentPage`` and ``firstItemIndex`` work for them too.
public struct PaginationInfo: Sendable, Hashable {
    /// The opaque cursor of the next page.
    public var nextCursor: String?
    /// The opaque cursor of the previous page.
    public var previousCursor: String?
    /// The URL of the next page.
    public var next: URL?
    /// The URL of the previous page.
    public var previous: URL?
    /// The number of this page, 1 for the first.
    public var page: Int?
    /// The page size.
    public var perPage: Int?
    /// The number of pages, as the server said.
    public var totalPages: Int?
    /// The number of items in the whole list.
    public var totalItems: Int?
    /// The index, in the whole list, of this page's first item (0 for the first page).
    public var firstItemIndex: Int?

    public init(
        nextCursor: String? = nil, previousCursor: String? = nil, next: URL? = nil, previous: URL? = nil,
        page: Int? = nil, perPage: Int? = nil, totalPages: Int? = nil, totalItems: Int? = nil,
        firstItemIndex: Int? = nil
    ) {
        self.nextCursor = nextCursor
        self.previousCursor = previousCursor
        self.next = next
        self.previous = previous
        self.page = page
        self.perPage = perPage
        self.totalPages = totalPages
        self.totalItems = totalItems
        self.firstItemIndex = firstItemIndex
    }

    /// Whether another page follows: a next cursor or link, or a page number below the number of pages.
    public var hasNextPage: Bool {
        if nextCursor != nil || next != nil { return true }
        if let page, let numberOfPages { return page < numberOfPages }
        return false
    }

    /// Whether a page precedes this one.
    public var hasPreviousPage: Bool {
        if previousCursor != nil || previous != nil { return true }
        if let page { return page > 1 }
        return false
    }

    /// Whether this is the last page.
    public var isLastPage: Bool { !hasNextPage }

    /// Whether this is the first page.
    public var isFirstPage: Bool { !hasPreviousPage }

    /// The number of this page (1-based), when known.
    public var currentPage: Int? { page }

    /// The number of pages: ``totalPages``, or computed from ``totalItems`` and ``perPage``
    /// (at least 1, as an empty list still shows one empty page).
    public var numberOfPages: Int? {
        if let totalPages { return totalPages }
        guard let totalItems, let perPage, perPage > 0 else { return nil }
        return max(1, (totalItems + perPage - 1) / perPage)
    }

    /// The indices, in the whole list, of the items on page `number` (1-based), e.g. `20..<30` for
    /// page 3 of 10 items per page; clamped to ``totalItems`` when known. `nil` when the page size
    /// is unknown or the page does not exist.
    public func indexRange(ofPage number: Int) -> Range<Int>? {
        guard number >= 1, let perPage, perPage > 0 else { return nil }
        if let numberOfPages, number > numberOfPages { return nil }
        let start = (number - 1) * perPage
        var end = start + perPage
        if let totalItems { end = min(end, totalItems) }
        return start..<max(start, end)
    }
}
