from rest_framework import serializers

from .models import Note


class NoteSerializer(serializers.ModelSerializer):
    owner = serializers.ReadOnlyField(source="owner.username", default=None)

    class Meta:
        model = Note
        fields = ["id", "title", "body", "done", "tags", "owner"]

    def validate(self, attrs):
        # An object-level rule, so that errors can come as non_field_errors.
        title = attrs.get("title", getattr(self.instance, "title", None))
        body = attrs.get("body", getattr(self.instance, "body", ""))
        if title and body and title == body:
            raise serializers.ValidationError("The body must not repeat the title.")
        return attrs
