"""Size limits clients learn from POST /register, kept in one place so checks and reports agree."""

from __future__ import annotations

MAX_STREAM_NAME_LENGTH = 60
MAX_STREAM_DESCRIPTION_LENGTH = 1024
MAX_CHANNEL_FOLDER_NAME_LENGTH = 60
MAX_CHANNEL_FOLDER_DESCRIPTION_LENGTH = 1024


def register_limits() -> dict[str, int]:
    """The limits as POST /register reports them."""
    return {
        "max_stream_name_length": MAX_STREAM_NAME_LENGTH,
        "max_stream_description_length": MAX_STREAM_DESCRIPTION_LENGTH,
        "max_channel_folder_name_length": MAX_CHANNEL_FOLDER_NAME_LENGTH,
        "max_channel_folder_description_length": MAX_CHANNEL_FOLDER_DESCRIPTION_LENGTH,
    }


# Messages. Topics are counted in characters, as clients count them.
MAX_MESSAGE_LENGTH = 10000
MAX_TOPIC_LENGTH = 60
