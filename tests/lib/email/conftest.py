from tests.email_helpers import smtp_server, worker

__all__ = ["smtp_server", "worker"]
