// Checkpoints of a DistributedShampoo: a directory with one safetensors state file per rank of a
// group (rank_<r>.safetensors, that rank's blocks under the usual state keys, with "step", "rank"
// and "num_ranks" in its metadata) and index.json, which names the files, the step, and the file
// holding each block. Loading works on any number of ranks and group size: each rank reads the
// files holding the blocks it now owns. Both are collective over all ranks, and every rank throws
// the same tessel::Error when any rank fails; a failed load changes no rank's optimizer.
#pragma once

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "../../io/json.hpp"
#include "../state/checkpoint.hpp"
#include "distributed.hpp"

namespace tessel::shampoo {

// The "format" of index.json.
inline constexpr char const* distributed_index_format = "tessel.shampoo.distributed/1";

inline std::string rank_file_name(index_t rank) {
  return "rank_" + std::to_string(rank) + ".safetensors";
}

// Saves into `dir` (created if needed): the ranks of group 0 write their state files, then rank 0
// writes index.json (atomically, last, so a directory whose save failed is never loaded as a
// whole; the step in every file is checked against the index).
template <class T>
void save_checkpoint(DistributedShampoo<T> const& optimizer, std::filesystem::path const& dir) {
  dist::Communicator& world = *optimizer.world_;
  std::int64_t const step = optimizer.step_count();
  detail::agree(world, [&] {
    if (world.rank() != 0) return;
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec)
      tessel::detail::throw_error(tessel::detail::sentence(
          "cannot create the checkpoint directory ", dir.string(), ": ", ec.message(), "."));
  });
  detail::agree(world, [&] {
    if (optimizer.group_index() != 0) return;
    save_state(dir / rank_file_name(optimizer.group_rank()), optimizer.state_dict(),
               {{"step", std::to_string(step)},
                {"rank", std::to_string(optimizer.group_rank())},
                {"num_ranks", std::to_string(optimizer.group_size())}});
  });
  detail::agree(world, [&] {
    if (world.rank() != 0) return;
    namespace json = tessel::detail::json;
    json::Value::Array files;
    for (index_t r = 0; r < optimizer.group_size(); ++r) files.emplace_back(rank_file_name(r));
    json::Value::Array blocks;
    for (auto const& b : optimizer.plan().blocks)
      blocks.push_back(json::Value::array({b.param, b.index, b.rank}));
    // Keys in sorted order, as nlohmann::json (a std::map) wrote them: the same bytes as before.
    json::Value const index =
        json::Value::object({{"blocks", json::Value::array(std::move(blocks))},
                             {"files", json::Value::array(std::move(files))},
                             {"format", distributed_index_format},
                             {"num_ranks", optimizer.group_size()},
                             {"step", step}});
    std::filesystem::path const path = dir / "index.json";
    std::filesystem::path const tmp = dir / "index.json.tmp";
    {
      std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
      out << json::dump(index) << '\n';
      if (!out.flush())
        tessel::detail::throw_error(
            tessel::detail::sentence("cannot write the checkpoint index ", tmp.string(), "."));
    }
    std::error_code ec;
    std::filesystem::rename(tmp, path, ec);
    if (ec) {
      std::filesystem::remove(tmp, ec);
      tessel::detail::throw_error(tessel::detail::sentence("cannot write the checkpoint index ",
                                                           path.string(), ": ", ec.message(), "."));
    }
  });
}

namespace detail {

// index.json, checked: the step, the file names, and the file of each (param, block).
struct DistributedIndex {
  std::int64_t step = 0;
  std::vector<std::string> files;
  std::map<std::pair<index_t, index_t>, std::size_t> file_of_block;
};

inline DistributedIndex read_distributed_index(std::filesystem::path const& dir) {
  std::filesystem::path const path = dir / "index.json";
  std::ifstream in(path, std::ios::binary);
  if (!in)
    tessel::detail::throw_error(tessel::detail::sentence(
        "the checkpoint directory ", dir.string(), " has no index.json; nothing was loaded."));
  std::string const text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  auto bad = [&](char const* why) {
    tessel::detail::throw_error(tessel::detail::sentence(
        path.string(), " is not a distributed Shampoo index: ", why, "; nothing was loaded."));
  };
  namespace json = tessel::detail::json;
  // An index nests three levels (the object, its list of blocks, a block); the limit only bounds
  // what a foreign file costs to read. A key repeated in an object makes a text no index either.
  json::Parsed const parsed = json::parse(text, 64);
  if (!parsed.value || !parsed.value->is_object()) bad("it is not a JSON object");
  json::Value const& j = *parsed.value;
  json::Value const* format = j.find("format");
  if (!format || !format->is_string() || format->string() != distributed_index_format)
    bad("its format is not tessel.shampoo.distributed/1");
  json::Value const* step = j.find("step");
  if (!step || !step->to_int64() || *step->to_int64() < 0) bad("it has no step >= 0");
  json::Value const* files = j.find("files");
  if (!files || !files->is_array() || files->items().empty()) bad("it has no list of files");
  json::Value const* blocks = j.find("blocks");
  if (!blocks || !blocks->is_array()) bad("it has no list of blocks");
  DistributedIndex index;
  index.step = *step->to_int64();
  for (json::Value const& f : files->items()) {
    if (!f.is_string() || f.string().empty() || std::filesystem::path(f.string()).has_parent_path())
      bad("a file is not a plain file name");
    index.files.push_back(f.string());
  }
  for (json::Value const& b : blocks->items()) {
    if (!b.is_array() || b.items().size() != 3 || !b.items()[0].to_int64() ||
        !b.items()[1].to_int64() || !b.items()[2].to_int64())
      bad("a block is not [parameter, block, file]");
    index_t const param = *b.items()[0].to_int64();
    index_t const block = *b.items()[1].to_int64();
    std::int64_t const file = *b.items()[2].to_int64();
    if (file < 0 || file >= static_cast<std::int64_t>(index.files.size()))
      bad("a block names a file it does not list");
    if (!index.file_of_block.emplace(std::pair{param, block}, static_cast<std::size_t>(file))
             .second)
      bad("it lists a block twice");
  }
  return index;
}

}  // namespace detail

// Loads a checkpoint written by save_checkpoint (on any number of ranks) into an optimizer with
// the same parameter shapes, blocking and options. Every rank checks that index.json and every
// file it lists exist, reads the files holding its blocks, and checks their states; only when all
// ranks succeeded does any rank change its optimizer.
// @post on any error, on every rank, the optimizer is unchanged
template <class T>
void load_checkpoint(DistributedShampoo<T>& optimizer, std::filesystem::path const& dir) {
  StateDict state;
  index_t step = 0;
  detail::agree(*optimizer.world_, [&] {
    detail::DistributedIndex const index = detail::read_distributed_index(dir);
    for (std::size_t f = 0; f < index.files.size(); ++f)
      if (!std::filesystem::exists(dir / index.files[f]))
        tessel::detail::throw_error(
            tessel::detail::sentence("the checkpoint ", dir.string(), " is missing the state file ",
                                     (dir / index.files[f]).string(), " of rank ", f, " of ",
                                     index.files.size(), "; nothing was loaded."));
    Plan const& plan = optimizer.plan();
    if (index.file_of_block.size() != plan.num_blocks())
      tessel::detail::throw_error(tessel::detail::sentence(
          "the checkpoint ", dir.string(), " holds ", index.file_of_block.size(),
          " blocks but this optimizer's plan has ", plan.num_blocks(), "; nothing was loaded."));
    std::set<std::size_t> needed;
    for (index_t b : optimizer.owned_blocks()) {
      BlockPlan const& bp = plan.blocks[static_cast<std::size_t>(b)];
      auto it = index.file_of_block.find({bp.param, bp.index});
      if (it == index.file_of_block.end())
        tessel::detail::throw_error(
            tessel::detail::sentence("the checkpoint ", dir.string(), " has no block ", bp.index,
                                     " of parameter ", bp.param, "; nothing was loaded."));
      needed.insert(it->second);
    }
    std::map<std::size_t, StateDict> files;
    for (std::size_t f : needed) {
      std::filesystem::path const path = dir / index.files[f];
      SafetensorsFile const file = read_safetensors(path);
      auto s = file.metadata.find("step");
      if (s == file.metadata.end() || s->second != std::to_string(index.step))
        tessel::detail::throw_error(tessel::detail::sentence(
            path.string(), " holds step ", s == file.metadata.end() ? "(none)" : s->second,
            " but index.json says ", index.step, "; nothing was loaded."));
      files.emplace(f, from_safetensors(file));
    }
    for (index_t b : optimizer.owned_blocks()) {
      BlockPlan const& bp = plan.blocks[static_cast<std::size_t>(b)];
      StateDict const& from = files.at(index.file_of_block.at({bp.param, bp.index}));
      std::string const param = std::to_string(bp.param);
      std::string const block = "block_" + std::to_string(bp.index);
      for (auto it = from.lower_bound({param, block}); it != from.end(); ++it) {
        if (it->first.size() < 2 || it->first[0] != param || it->first[1] != block) break;
        state.insert(*it);
      }
    }
    for (std::size_t p = 0; p < plan.num_params(); ++p)
      state[{std::to_string(p), "step"}] =
          make_state_tensor<std::int64_t>({}, std::span<std::int64_t const>(&index.step, 1));
    step = optimizer.check_local_state(state);
  });
  optimizer.assign_local_state(state, step);
}

}  // namespace tessel::shampoo
