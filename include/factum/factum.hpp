// factum/factum.hpp — the umbrella header: everything a service needs from factum.
#pragma once

#include "factum/aggregates/aggregate.hpp"
#include "factum/aggregates/repository.hpp"

#include "factum/eventstore/errors.hpp"
#include "factum/eventstore/event.hpp"
#include "factum/eventstore/event_id.hpp"
#include "factum/eventstore/event_range.hpp"
#include "factum/eventstore/event_registry.hpp"
#include "factum/eventstore/event_store.hpp"
#include "factum/eventstore/expected_version.hpp"
#include "factum/eventstore/payload_archive.hpp"
#include "factum/eventstore/sql.hpp"
#include "factum/eventstore/store_options.hpp"
#include "factum/eventstore/text.hpp"
#include "factum/projections/checkpoint_store.hpp"
#include "factum/projections/consumer_group.hpp"
#include "factum/projections/projection.hpp"
#include "factum/projections/projection_engine.hpp"
#include "factum/projections/subscription.hpp"
#include "factum/projections/windows.hpp"
#include "factum/snapshots/snapshot_store.hpp"
