"""Email: building messages from templates, the outbox, SMTP delivery and the gateway."""
