"""Errors the Docker API answers as Docker does: an HTTP status and ``{"message": ...}``."""

from __future__ import annotations


class ApiError(Exception):
    """Answered as ``status`` with ``{"message": message}``; docker-py raises it as an APIError."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def not_found(message: str) -> ApiError:
    return ApiError(404, message)


def bad_request(message: str) -> ApiError:
    return ApiError(400, message)


def conflict(message: str) -> ApiError:
    return ApiError(409, message)


def server_error(message: str) -> ApiError:
    return ApiError(500, message)
