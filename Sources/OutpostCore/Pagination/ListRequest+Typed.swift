import Foundation

extension ListRequest {
    /// Lists only the records `filter` selects, sent as `filter=` with its
    /// ``RecordFilter/expression()``, in place of any earlier filter expression.
    ///
    /// ```swift
    /// ListRequest(Article.self).filter(Article.views > 10 && Article.tag.in(["a", "b"]))
    /// ```
    ///
    /// A filter that cannot be rendered (a field name the language cannot write, a NaN) makes
    /// the list fail with ``OutpostError/Code/invalidRequest`` before anything is sent.
    ///
    /// - Parameter filter: The condition on the records, typed by the list's item type.
    public func filter(_ filter: RecordFilter<Item>) -> ListRequest {
        do {
            var copy = self.filter(try filter.expression())
            copy.queryErrors["filter"] = nil
            return copy
        } catch {
            var copy = self
            copy.query.removeAll { $0.name == "filter" }
            copy.queryErrors["filter"] = error
            return copy
        }
    }

    /// Orders the list by `keys`, sent as `sort=` (`-views,title`), in place of any earlier order.
    ///
    /// ```swift
    /// ListRequest(Article.self).sorted(by: Article.views.descending, Article.title.ascending)
    /// ```
    ///
    /// A key that is not a top-level field name of 1–64 letters, digits, `_` or `-` makes the list
    /// fail with ``OutpostError/Code/invalidRequest`` before anything is sent.
    ///
    /// - Parameter keys: The keys, most significant first; an Outpost server reads at most 3.
    public func sorted(by keys: RecordSortKey<Item>...) -> ListRequest {
        var parameters: [String] = []
        for key in keys {
            do {
                parameters.append(try key.parameter())
            } catch {
                var copy = self
                copy.query.removeAll { $0.name == "sort" }
                copy.queryErrors["sort"] = error
                return copy
            }
        }
        var copy = self
        copy.query.removeAll { $0.name == "sort" }
        copy.query.append(URLQueryItem(name: "sort", value: parameters.joined(separator: ",")))
        copy.queryErrors["sort"] = nil
        return copy
    }
}
