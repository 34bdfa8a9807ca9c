from rest_framework import viewsets
from rest_framework.pagination import CursorPagination, PageNumberPagination

from .models import Note
from .serializers import NoteSerializer


class NotePages(PageNumberPagination):
    page_size = 4
    page_size_query_param = "page_size"
    max_page_size = 50


class NoteCursor(CursorPagination):
    page_size = 4
    page_size_query_param = "page_size"
    max_page_size = 50
    ordering = "id"


class NoteViewSet(viewsets.ModelViewSet):
    """Page-number lists: {"count", "next", "previous", "results"}."""

    queryset = Note.objects.order_by("id")
    serializer_class = NoteSerializer
    pagination_class = NotePages

    def perform_create(self, serializer):
        serializer.save(owner=self.request.user)


class CursorNoteViewSet(NoteViewSet):
    """Cursor lists: {"next", "previous", "results"}, the cursor opaque inside the links."""

    pagination_class = NoteCursor


class UnpaginatedNoteViewSet(NoteViewSet):
    """Lists as a bare JSON array."""

    pagination_class = None
