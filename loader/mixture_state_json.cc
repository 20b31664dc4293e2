#include "seedloader/mixture_state_json.h"

#include <nlohmann/json.hpp>
#include <vector>

#include "base/json_depth.h"
#include "sampler/mixture_history_json.h"
#include "seedloader/error.h"

namespace seedloader {

using Json = nlohmann::ordered_json;  // the sources keep the mixture's order

std::string mixture_state_json(const MixtureState& s) {
  Json sources = Json::object();
  for (std::size_t i = 0; i < s.names.size(); ++i)
    sources[s.names[i]] = {{"size", s.sizes[i]},
                           {"epoch", s.consumed[i] / s.sizes[i]},
                           {"consumed", s.consumed[i]},
                           {"epoch_first_count", s.epoch_first_counts[i]}};
  return Json{{"step", s.step},
              {"samples_per_epoch", s.samples_per_epoch},
              {"epoch_first_step", s.epoch_first_step},
              {"sources", sources},
              {"history", mixture_history_json(s.history)}}
      .dump();
}

MixtureState parse_mixture_state(const std::string& where, const std::string& text) {
  MixtureState s;
  try {
    const Json j = parse_json<Json>(text);
    s.step = json_unsigned(j.at("step"));
    s.samples_per_epoch = json_unsigned(j.at("samples_per_epoch"));
    s.epoch_first_step = json_unsigned(j.at("epoch_first_step"));
    for (const auto& [name, info] : j.at("sources").items()) {
      s.names.push_back(name);
      s.sizes.push_back(json_unsigned(info.at("size")));
      s.consumed.push_back(json_unsigned(info.at("consumed")));
      s.epoch_first_counts.push_back(json_unsigned(info.at("epoch_first_count")));
      if (s.sizes.back() == 0)
        throw DataError(where + ": the mixture state's source '" + name + "' has size 0");
    }
    // Its refusals name `where` themselves.
    s.history = parse_mixture_history(where, j.at("history"));
  } catch (const Json::exception& e) {
    throw DataError(where + ": the mixture state is malformed: " + e.what());
  }
  return s;
}

}  // namespace seedloader
