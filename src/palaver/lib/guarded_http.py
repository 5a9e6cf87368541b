"""An httpx transport for URLs users chose: it connects only to the address it checked.

Outgoing webhooks are POSTed with httpx (JSON and form bodies, its timeouts); its own
transport would resolve the name again after any check of ours, so a name that answers
with a public address for the check and with 127.0.0.1 a moment later (DNS rebinding)
would reach the inside. This transport sends through an httpcore pool whose network
backend is the link-preview fetcher's (``lib/guarded_backend.py``): the name is resolved
once, at connect time, and the connection is made to the very address that passed.

Imported only where a request goes out (httpx is large).
"""

from __future__ import annotations

import httpcore
import httpx

from palaver.lib.guarded_backend import GuardedBackend

# Most of an answer a caller reads; a service that sends more is cut off.
MAX_RESPONSE_BYTES = 10 * 1024 * 1024


class GuardedTransport(httpx.BaseTransport):
    def __init__(self, *, allow_private: bool, max_connections: int = 4) -> None:
        self._pool = httpcore.ConnectionPool(
            network_backend=GuardedBackend(allow_private), max_connections=max_connections, retries=0
        )

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        url = request.url
        assert isinstance(request.stream, httpx.SyncByteStream)  # a sync Client's request
        try:
            with self._pool.stream(
                request.method,
                httpcore.URL(scheme=url.raw_scheme, host=url.raw_host, port=url.port, target=url.raw_path),
                headers=request.headers.raw,
                content=iter(request.stream),
                extensions=request.extensions,
            ) as response:
                chunks: list[bytes] = []
                size = 0
                for chunk in response.iter_stream():
                    size += len(chunk)
                    if size > MAX_RESPONSE_BYTES:
                        raise httpx.DecodingError("response too large", request=request)
                    chunks.append(chunk)
                return httpx.Response(
                    status_code=response.status,
                    headers=response.headers,
                    content=b"".join(chunks),
                    request=request,
                )
        except httpcore.TimeoutException as e:
            raise httpx.TimeoutException(str(e) or "timed out", request=request) from e
        except httpcore.ConnectError as e:
            raise httpx.ConnectError(str(e) or "cannot connect", request=request) from e
        except (httpcore.NetworkError, httpcore.ProtocolError, httpcore.UnsupportedProtocol) as e:
            raise httpx.TransportError(str(e) or type(e).__name__, request=request) from e

    def close(self) -> None:
        self._pool.close()
