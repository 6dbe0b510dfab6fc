#include "factum/kafka/errors.hpp"

#include <utility>

namespace factum::kafka {

KafkaError::KafkaError(std::string subject, int code, const std::string& message)
    : Error(message), subject_(std::move(subject)), code_(code) {}

DeliveryError::DeliveryError(std::string topic, Position position, int code,
                             const std::string& message)
    : KafkaError(std::move(topic), code, message), position_(position) {}

}  // namespace factum::kafka
