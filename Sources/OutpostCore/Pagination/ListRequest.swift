public import Foundation

/// What to list and what to decode each item as: the item type need not be an ``Entity``, so a list
/// can yield lightweight previews (the seed SDK's `classOfItems`).
///
/// ```swift
/// struct BlogPostPreview: Decodable, Sendable { var id: String; var title: String }
/// let blogPage = ListRequest(resourcePath: "records/posts", of: BlogPostPreview.self, pageSize: 20,
///                            query: [URLQueryItem(name: "author", value: "ada")])
/// let previews: [BlogPostPreview] = try await store.page(blogPage).items
/// let popular = try await store.page(blogPage.filter("record.views > 10").sorted(by: "-views", "title")).items
/// ```
public struct ListRequest<Item: Decodable & Sendable>: Sendable {
    /// The collection, relative to the base URL, before ``EntityConfiguration/collectionPathTemplate``.
    public var resourcePath: String
    /// Filters, sorting and any other query parameters, sent with every page.
    public var query: [URLQueryItem]
    /// Items per page, or `nil` for the server's default.
    public var pageSize: Int?
    /// Overrides the store's ``EntityConfiguration/pagination`` (e.g. ``PaginationStyle/outpostPageNumbers``).
    public var pagination: PaginationStyle?
    /// Page-number style: the page to start at (1 is the first). Default: the first.
    public var page: Int?
    /// Cursor style: the cursor to start at. Default: the beginning.
    public var cursor: String?
    /// How this list's body holds its items, when it differs from the store's
    /// ``EntityConfiguration/listItemsKey``: e.g. ``ListShape/bareArray`` for a route without pagination.
    public var shape: ListShape?
    /// Why a typed filter or sort could not be rendered, by query parameter: the list fails with it instead of being requested.
    var queryErrors: [String: OutpostError] = [:]

    public init(
        resourcePath: String, of itemType: Item.Type = Item.self, pageSize: Int? = nil, query: [URLQueryItem] = [],
        pagination: PaginationStyle? = nil, page: Int? = nil, cursor: String? = nil, shape: ListShape? = nil
    ) {
        self.resourcePath = resourcePath
        self.query = query
        self.pageSize = pageSize
        self.pagination = pagination
        self.page = page
        self.cursor = cursor
        self.shape = shape
    }

    /// Adds an equality filter (`field=value`).
    public func filter(_ field: String, _ value: String) -> ListRequest {
        var copy = self
        copy.query.append(URLQueryItem(name: field, value: value))
        return copy
    }

    /// Lists only what `expression` selects, sent as `filter=expression`. On an Outpost server it
    /// is an expression over `record`, e.g. `record.views > 10 && record.title ^= "Intro"` (see
    /// docs/PROTOCOL.md, "Lists"); one the server cannot run fails with its 400 `invalid_filter`.
    public func filter(_ expression: String) -> ListRequest {
        var copy = self
        copy.query.removeAll { $0.name == "filter" }
        copy.query.append(URLQueryItem(name: "filter", value: expression))
        copy.queryErrors["filter"] = nil
        return copy
    }

    /// Orders the list by `keys`, sent as `sort=key,key`: each a field name, `-` first for
    /// descending, e.g. `sorted(by: "-views", "title")`. On an Outpost server ties end by `id`.
    public func sorted(by keys: String...) -> ListRequest {
        var copy = self
        copy.query.removeAll { $0.name == "sort" }
        copy.query.append(URLQueryItem(name: "sort", value: keys.joined(separator: ",")))
        copy.queryErrors["sort"] = nil
        return copy
    }
}

extension ListRequest where Item: Entity {
    /// Lists an entity's collection as that entity type.
    public init(
        _ type: Item.Type, pageSize: Int? = nil, query: [URLQueryItem] = [], pagination: PaginationStyle? = nil,
        page: Int? = nil, cursor: String? = nil, shape: ListShape? = nil
    ) {
        self.init(
            resourcePath: Item.resourcePath, of: type, pageSize: pageSize, query: query, pagination: pagination,
            page: page, cursor: cursor, shape: shape)
    }
}

/// How a list response holds its items.
public enum ListShape: Sendable, Hashable {
    /// The body is a JSON array of the items, and the list has one page (e.g. a Django REST framework
    /// view without a pagination class).
    case bareArray
    /// The body is an object whose `itemsKey` holds the items, next to the pagination keys.
    case object(itemsKey: String)
}
