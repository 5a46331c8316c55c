"""Every Kafka API handler module; importing this package registers them all with ``api``.

ApiVersions answers exactly what is registered, so a module not imported here is not served.
Add one import line per handler module.
"""

from broker_nodes.kafka_protocol.handlers import api_versions as api_versions
