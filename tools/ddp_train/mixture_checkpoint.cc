#include "tools/ddp_train/mixture_checkpoint.h"

#include <nlohmann/json.hpp>
#include <utility>
#include <vector>

#include "seedloader/error.h"

namespace seedloader::train {

using Json = nlohmann::ordered_json;  // the sources keep the mixture's order

std::string mixture_state_json(const MixtureState& s) {
  Json sources = Json::object();
  for (std::size_t i = 0; i < s.names.size(); ++i)
    sources[s.names[i]] = {{"size", s.sizes[i]},
                           {"epoch", s.consumed[i] / s.sizes[i]},
                           {"consumed", s.consumed[i]},
                           {"epoch_first_count", s.epoch_first_counts[i]}};
  Json history = Json::array();
  for (const MixtureSegment& seg : s.history) {
    Json points = Json::array();
    for (const WeightPoint& p : seg.schedule.points())
      points.push_back({p.step, p.weights});
    history.push_back({seg.from_step, seg.schedule.sources(), points, seg.consumed});
  }
  return Json{{"step", s.step},
              {"samples_per_epoch", s.samples_per_epoch},
              {"epoch_first_step", s.epoch_first_step},
              {"sources", sources},
              {"history", history}}
      .dump();
}

MixtureState parse_mixture_state(const std::string& path, const std::string& text) {
  MixtureState s;
  try {
    const Json j = Json::parse(text);
    s.step = j.at("step").get<std::uint64_t>();
    s.samples_per_epoch = j.at("samples_per_epoch").get<std::uint64_t>();
    s.epoch_first_step = j.at("epoch_first_step").get<std::uint64_t>();
    for (const auto& [name, info] : j.at("sources").items()) {
      s.names.push_back(name);
      s.sizes.push_back(info.at("size").get<std::uint64_t>());
      s.consumed.push_back(info.at("consumed").get<std::uint64_t>());
      s.epoch_first_counts.push_back(info.at("epoch_first_count").get<std::uint64_t>());
      if (s.sizes.back() == 0) throw DataError("source '" + name + "' has size 0");
    }
    for (const Json& seg : j.at("history")) {
      std::vector<WeightPoint> points;
      for (const Json& p : seg.at(2))
        points.push_back(
            {p.at(0).get<std::uint64_t>(), p.at(1).get<std::vector<double>>()});
      s.history.push_back(
          {seg.at(0).get<std::uint64_t>(),
           MixtureSchedule(seg.at(1).get<std::vector<std::string>>(), std::move(points)),
           seg.at(3).get<std::vector<std::uint64_t>>()});
    }
  } catch (const Json::exception& e) {
    throw DataError("checkpoint " + path +
                    ": metadata 'mixture' is malformed: " + e.what());
  } catch (const Error& e) {
    throw DataError("checkpoint " + path + ": metadata 'mixture': " + e.what());
  }
  return s;
}

}  // namespace seedloader::train
