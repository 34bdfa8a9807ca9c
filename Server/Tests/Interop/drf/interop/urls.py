from django.contrib.auth import views as auth_views
from django.urls import include, path
from oauth2_provider import urls as oauth2_urls
from rest_framework.routers import DefaultRouter

from notes import views

router = DefaultRouter()
router.register("notes", views.NoteViewSet, basename="note")
router.register("cursor-notes", views.CursorNoteViewSet, basename="cursor-note")
router.register("all-notes", views.UnpaginatedNoteViewSet, basename="all-note")

urlpatterns = [
    path("api/", include(router.urls)),
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    # DOT under /o/; its RFC 8414 document also at the root, where strict clients look for it.
    path("o/", include(oauth2_urls)),
    path("", include((oauth2_urls.metadata_urlpatterns, "oauth2_metadata"))),
]
