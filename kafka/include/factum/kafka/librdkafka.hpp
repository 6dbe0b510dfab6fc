// factum/kafka/librdkafka.hpp — librdkafka's functions, loaded when the Kafka bridge is first used.
//
// factum::kafka does not link librdkafka: linked, it and the libraries it needs (OpenSSL's
// libssl, SASL, zstd, lz4) are loaded and initialised at the start of every program that links
// factum::kafka, Kafka used or not (+3-5 ms per process start on the reference machine:
// docs/performance.md, "What a program pays at start"). The bridge (Relay, Ingest,
// RequestReply) loads it with dlopen when its first object is made. A program that talks to
// librdkafka itself (an admin call, the in-process mock cluster of a test or a demo) can call it
// through librdkafka() below and so need not link it either; linking it as well is harmless:
// both then use the one copy the process loaded.
//
// Thread-safety: librdkafka() may be called from any thread; it loads the library once. The
// functions are librdkafka's own, with its thread-safety.
#pragma once

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

namespace factum::kafka {

// Every librdkafka function factum::kafka and its samples call. rd_kafka_query_watermark_offsets
// is left out on purpose: in librdkafka 2.0.2 it never returns once the broker is gone (fixed in
// 2.3.0); rd_kafka_offsets_for_times with RD_KAFKA_OFFSET_END asks the same and keeps to its
// timeout.
#define FACTUM_RDKAFKA_FUNCTIONS(X)        \
  X(rd_kafka_abort_transaction)            \
  X(rd_kafka_assign)                       \
  X(rd_kafka_assignment)                   \
  X(rd_kafka_begin_transaction)            \
  X(rd_kafka_commit_transaction)           \
  X(rd_kafka_conf_destroy)                 \
  X(rd_kafka_conf_new)                     \
  X(rd_kafka_conf_set)                     \
  X(rd_kafka_conf_set_dr_msg_cb)           \
  X(rd_kafka_conf_set_opaque)              \
  X(rd_kafka_conf_set_rebalance_cb)        \
  X(rd_kafka_consumer_close)               \
  X(rd_kafka_consumer_poll)                \
  X(rd_kafka_destroy)                      \
  X(rd_kafka_err2str)                      \
  X(rd_kafka_error_code)                   \
  X(rd_kafka_error_destroy)                \
  X(rd_kafka_error_is_fatal)               \
  X(rd_kafka_error_is_retriable)           \
  X(rd_kafka_error_string)                 \
  X(rd_kafka_error_txn_requires_abort)     \
  X(rd_kafka_fatal_error)                  \
  X(rd_kafka_flush)                        \
  X(rd_kafka_get_watermark_offsets)        \
  X(rd_kafka_header_add)                   \
  X(rd_kafka_header_get_all)               \
  X(rd_kafka_header_get_last)              \
  X(rd_kafka_headers_destroy)              \
  X(rd_kafka_headers_new)                  \
  X(rd_kafka_incremental_assign)           \
  X(rd_kafka_incremental_unassign)         \
  X(rd_kafka_init_transactions)            \
  X(rd_kafka_message_destroy)              \
  X(rd_kafka_message_errstr)               \
  X(rd_kafka_message_headers)              \
  X(rd_kafka_metadata)                     \
  X(rd_kafka_metadata_destroy)             \
  X(rd_kafka_mock_cluster_bootstraps)      \
  X(rd_kafka_mock_cluster_destroy)         \
  X(rd_kafka_mock_cluster_new)             \
  X(rd_kafka_mock_topic_create)            \
  X(rd_kafka_new)                          \
  X(rd_kafka_offsets_for_times)            \
  X(rd_kafka_poll)                         \
  X(rd_kafka_poll_set_consumer)            \
  X(rd_kafka_produceva)                    \
  X(rd_kafka_purge)                        \
  X(rd_kafka_rebalance_protocol)           \
  X(rd_kafka_seek_partitions)              \
  X(rd_kafka_subscribe)                    \
  X(rd_kafka_topic_destroy)                \
  X(rd_kafka_topic_new)                    \
  X(rd_kafka_topic_partition_list_add)     \
  X(rd_kafka_topic_partition_list_del)     \
  X(rd_kafka_topic_partition_list_destroy) \
  X(rd_kafka_topic_partition_list_new)

// Pointers to those functions, each with librdkafka's own signature.
struct LibRdKafka {
#define FACTUM_RDKAFKA_MEMBER(name) decltype(&::name) name = nullptr;
  FACTUM_RDKAFKA_FUNCTIONS(FACTUM_RDKAFKA_MEMBER)
#undef FACTUM_RDKAFKA_MEMBER
};

// librdkafka's functions, from the library named by the environment variable FACTUM_LIBRDKAFKA
// (a file name or a path) or else the one factum was built against (librdkafka.so.1 when it lies
// in a directory the system's loader searches, its full path otherwise), loaded on the first call
// and never unloaded.
// Throws KafkaError (subject "librdkafka") naming the library when it cannot be loaded or lacks
// one of the functions (librdkafka 1.9 or newer has them all); a later call tries again.
const LibRdKafka& librdkafka();

}  // namespace factum::kafka
