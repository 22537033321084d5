"""Token documents, packing and mixing through feedline.DataLoader
(feedline.io.TokenDataset, PackOptions, MixedDataset; docs/text.md)."""

import numpy as np
import pytest

import feedline
from feedline import io


def long_tailed_lengths(n, seed, scale=5.0):
    """Log-normal lengths, as web text: most documents short, a few long."""
    rng = np.random.default_rng(seed)
    return (np.exp(rng.normal(scale, 1.1, n)).astype(np.int64) + 1)


def unique_documents(lengths):
    """Documents whose tokens are their positions in the flat array (each
    token unique), as a TokenDataset."""
    offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    return io.TokenDataset(np.arange(offsets[-1], dtype=np.int64), offsets)


class PythonDocuments(io.Dataset):
    """The same documents as a Python dataset of dict samples."""

    def __init__(self, documents):
        self.documents = documents

    def __len__(self):
        return len(self.documents)

    def __getitem__(self, i):
        return {"input_ids": self.documents[i]["input_ids"].astype(np.int32)}


# A reference packing in plain Python: the planner's rules (docs/text.md)
# written again, independently.
def reference_plan(lengths, seq_len, strategy, max_segments=None, open_rows=64):
    cap = max_segments or seq_len
    rows, open_, age = [], {}, 0  # open_: age -> [pieces, used]

    def close(a):
        rows.append(open_.pop(a)[0])

    for doc, length in enumerate(lengths):
        if length == 0:
            continue
        if strategy == "concat_split":
            offset = 0
            while offset < length:
                if not open_:
                    open_[0] = [[], 0]
                row = open_[0]
                if len(row[0]) == cap:
                    close(0)
                    continue
                take = min(length - offset, seq_len - row[1])
                row[0].append((doc, offset, take))
                row[1] += take
                offset += take
                if row[1] == seq_len:
                    close(0)
            continue
        offset = 0
        while length - offset >= seq_len:
            rows.append([(doc, offset, seq_len)])
            offset += seq_len
        rest = length - offset
        if rest == 0:
            continue
        fits = [a for a, (_, used) in open_.items() if seq_len - used >= rest]
        if fits:
            if strategy == "best_fit":
                target = min(fits, key=lambda a: (seq_len - open_[a][1], a))
            else:
                target = min(fits)
        else:
            if len(open_) >= open_rows:
                close(min(open_, key=lambda a: (seq_len - open_[a][1], a)))
            target, age = age, age + 1
            open_[target] = [[], 0]
        row = open_[target]
        row[0].append((doc, offset, rest))
        row[1] += rest
        if row[1] == seq_len or len(row[0]) == cap:
            close(target)
    for a in sorted(open_):
        close(a)
    return rows


def reference_fields(row, tokens_of, seq_len, max_segments):
    """input_ids, labels, position_ids, segment_ids, cu_seqlens of one row."""
    ids, labels, pos, seg, cu = [], [], [], [], [0]
    for k, (doc, offset, length) in enumerate(row):
        tokens = tokens_of(doc)
        ids += list(tokens[offset:offset + length])
        # The next token of the document: past the piece too when the
        # document goes on (a cut), none after its last token.
        nxt = list(tokens[offset + 1:offset + length + 1])
        labels += nxt + [-100] * (length - len(nxt))
        pos += list(range(length))
        seg += [k + 1] * length
        cu.append(cu[-1] + length)
    pad = seq_len - len(ids)
    cu += [cu[-1]] * (max_segments + 1 - len(cu))
    return (ids + [0] * pad, labels + [-100] * pad, pos + [0] * pad, seg + [0] * pad, cu)


def rows_of(loader):
    """Every row of one epoch as a tuple of its five fields' lists."""
    rows = []
    for batch in loader:
        for r in range(batch["input_ids"].shape[0]):
            rows.append(tuple(batch[f][r].tolist() for f in
                              ("input_ids", "labels", "position_ids", "segment_ids", "cu_seqlens")))
    return rows


@pytest.mark.parametrize("strategy", ["best_fit", "first_fit", "concat_split"])
def test_plan_and_rows_match_a_plain_python_packing(strategy):
    lengths = long_tailed_lengths(400, seed=1, scale=4.0)
    docs = unique_documents(lengths)
    pack = io.PackOptions(96, strategy=strategy, max_segments=5, open_rows=8)
    expected_rows = reference_plan(lengths.tolist(), 96, strategy, 5, 8)
    plan = pack.plan(lengths)
    got_rows = [
        list(zip(plan["document"][a:b].tolist(), plan["offset"][a:b].tolist(),
                 plan["length"][a:b].tolist()))
        for a, b in zip(plan["row_offsets"][:-1], plan["row_offsets"][1:])
    ]
    assert got_rows == [list(r) for r in expected_rows]
    loader = io.DataLoader(docs, batch_size=4, pack=pack, seed=0)
    tokens_of = lambda d: docs[d]["input_ids"].tolist()  # noqa: E731
    expected = [tuple(reference_fields(r, tokens_of, 96, 5)) for r in expected_rows]
    got = rows_of(loader)
    for r, (g, e) in enumerate(zip(got, expected)):
        assert g == e, f"row {r}"
    assert len(got) == len(expected)


def test_every_token_once_and_the_same_rows_for_0_1_3_workers():
    lengths = long_tailed_lengths(1500, seed=2)
    docs = unique_documents(lengths)
    pack = io.PackOptions(512, max_segments=8)

    def epochs(workers):
        loader = io.DataLoader(docs, batch_size=8, shuffle=True, num_workers=workers, seed=7,
                               pack=pack)
        return [rows_of(loader) for _ in range(2)]

    zero = epochs(0)
    assert zero[0] != zero[1]  # another epoch packs other documents together
    for epoch in zero:
        tokens = []
        for ids, _, _, seg, cu in epoch:
            real = [t for t, s in zip(ids, seg) if s]
            assert len(real) <= 512 and max(seg) <= 8 and len(cu) == 9
            tokens += real
        assert sorted(tokens) == list(range(int(lengths.sum())))
    assert epochs(1) == zero
    assert epochs(3) == zero


def test_worker_processes_pack_the_same_rows_as_threads():
    docs = unique_documents(long_tailed_lengths(600, seed=12))
    pack = io.PackOptions(256, max_segments=8)

    def epochs(**kwargs):
        loader = io.DataLoader(docs, batch_size=4, shuffle=True, seed=1, num_workers=2,
                               pack=pack, **kwargs)
        try:
            return [rows_of(loader) for _ in range(2)]
        finally:
            loader.close()

    assert epochs(worker_mode="process", persistent_workers=True) == epochs()


def test_a_python_dataset_of_documents_packs_the_same():
    lengths = long_tailed_lengths(300, seed=3)
    docs = unique_documents(lengths)
    pack = io.PackOptions(256, strategy="first_fit")
    native = rows_of(io.DataLoader(docs, batch_size=4, shuffle=True, seed=1, pack=pack))
    python = rows_of(io.DataLoader(PythonDocuments(docs), batch_size=4, shuffle=True, seed=1,
                                   pack=pack, num_workers=2))
    assert python == native


def test_resume_mid_epoch_gives_the_rest_of_the_rows():
    docs = unique_documents(long_tailed_lengths(800, seed=4))
    pack = io.PackOptions(300)

    def loader(workers):
        return io.DataLoader(docs, batch_size=4, shuffle=True, seed=5, num_workers=workers,
                             pack=pack)

    whole = loader(2)
    rows_of(whole)
    expected = rows_of(whole)  # epoch 1
    first = loader(1)
    rows_of(first)
    head = []
    for i, batch in enumerate(first):
        head += [tuple(batch[f][r].tolist() for f in
                       ("input_ids", "labels", "position_ids", "segment_ids", "cu_seqlens"))
                 for r in range(batch["input_ids"].shape[0])]
        if i == 4:
            break
    state = first.state_dict()
    assert state["epoch"] == 1 and state["next_batch"] == 5
    second = loader(3)
    second.load_state_dict(state)
    assert head + rows_of(second) == expected


def test_long_documents_split_truncate_or_drop():
    lengths = np.array([10, 700, 3])
    docs = unique_documents(lengths)
    for policy, kept in (("split", 713), ("truncate", 256 + 13), ("drop", 13)):
        pack = io.PackOptions(256, long_documents=policy)
        rows = rows_of(io.DataLoader(docs, batch_size=2, pack=pack))
        assert sum(sum(1 for s in seg if s) for _, _, _, seg, _ in rows) == kept, policy


def test_packed_batch_gives_the_loss_of_its_documents_one_by_one():
    import torch
    import torch.nn.functional as F

    torch.manual_seed(0)
    vocab, dim, seq_len = 50, 16, 64
    lengths = [9, 30, 17, 5, 40, 22, 11, 3]
    rng = np.random.default_rng(0)
    documents = [rng.integers(0, vocab, n) for n in lengths]
    docs = io.TokenDataset.from_documents(documents)
    embed = torch.nn.Embedding(vocab, dim)
    position = torch.nn.Embedding(seq_len, dim)
    qkv = torch.nn.Linear(dim, 3 * dim)
    head = torch.nn.Linear(dim, vocab)

    def attention(q, k, v, mask):
        if hasattr(F, "scaled_dot_product_attention"):  # torch 2
            return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        # torch 1.13 (Debian's, which make test's python3 has): what SDPA
        # computes with a boolean mask.
        scores = q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5
        return scores.masked_fill(~mask, float("-inf")).softmax(-1) @ v

    def loss_sum(ids, positions, labels, mask):
        x = embed(ids) + position(positions)
        q, k, v = qkv(x).chunk(3, dim=-1)
        y = attention(q, k, v, mask)
        return F.cross_entropy(head(y).flatten(0, 1), labels.flatten(), ignore_index=-100,
                               reduction="sum")

    packed = torch.zeros(())
    count = 0
    loader = io.DataLoader(docs, batch_size=3, pack=io.PackOptions(seq_len, max_segments=4))
    for batch in loader:
        ids = torch.from_numpy(batch["input_ids"])
        seg = torch.from_numpy(batch["segment_ids"])
        # Block-diagonal and causal: a token sees the earlier tokens of its
        # own segment; padding sees itself only (its labels are ignored).
        same = (seg[:, :, None] == seg[:, None, :]) & (seg[:, :, None] > 0)
        causal = torch.ones(seq_len, seq_len, dtype=torch.bool).tril()
        mask = (same & causal) | torch.eye(seq_len, dtype=torch.bool)
        labels = torch.from_numpy(batch["labels"])
        packed = packed + loss_sum(ids, torch.from_numpy(batch["position_ids"]), labels, mask)
        count += int((labels != -100).sum())
    alone = torch.zeros(())
    for doc in documents:
        ids = torch.from_numpy(doc)[None]
        labels = torch.cat([ids[:, 1:], torch.full((1, 1), -100)], dim=1)
        causal = torch.ones(len(doc), len(doc), dtype=torch.bool).tril()
        alone = alone + loss_sum(ids, torch.arange(len(doc))[None], labels, causal)
    assert count == sum(n - 1 for n in lengths)
    assert torch.allclose(packed, alone, rtol=1e-5, atol=1e-4), (packed, alone)


def test_pack_options_and_loader_arguments_are_checked_by_name():
    docs = unique_documents([3, 4])
    with pytest.raises(ValueError, match="seq_len must be >= 1"):
        io.PackOptions(0)
    with pytest.raises(ValueError, match="strategy must be one of"):
        io.PackOptions(8, strategy="bestfit")
    with pytest.raises(ValueError, match="long_documents"):
        io.PackOptions(8, long_documents="cut")
    # Upper bounds where the options are given, not a crash at the first batch.
    for too_long in (2**26 + 1, 2**31, 2**62):
        with pytest.raises(ValueError, match=r"seq_len must be between 1 and 67108864 \(a row's"):
            io.PackOptions(too_long)
    with pytest.raises(ValueError, match="must fit in int64"):
        io.PackOptions(2**64)
    with pytest.raises(ValueError, match=r"max_segments must be between 1 and seq_len \(8\)"):
        io.PackOptions(8, max_segments=9)
    with pytest.raises(ValueError, match="open_rows must be between 1 and 1048576"):
        io.PackOptions(8, open_rows=2**40)
    with pytest.raises(ValueError, match="pad_id must be an int64"):
        io.PackOptions(8, pad_id=2**63)
    with pytest.raises(ValueError, match="batch_sampler must be left unset"):
        io.DataLoader(docs, batch_sampler=io.BatchSampler(docs, batch_size=1),
                      pack=io.PackOptions(8))
    with pytest.raises(TypeError, match="pack must be a feedline.io.PackOptions"):
        io.DataLoader(docs, pack={"seq_len": 8})
    with pytest.raises(TypeError, match="must be a feedline sampler"):
        io.DataLoader(docs, sampler=[1, 0], pack=io.PackOptions(8))


def token_sources(sizes, length=4):
    """Source k's row i is a document of `length` tokens k * 10^6 + i."""
    return [io.TokenDataset(np.repeat(np.arange(n) + k * 10**6, length),
                            np.arange(n + 1) * length) for k, n in enumerate(sizes)]


def test_mixing_holds_the_weights_in_every_window_of_10000_rows():
    sources = token_sources([40000, 30000, 9000])
    mix = io.MixedDataset(sources, [0.5, 0.3, 0.2], stopping="never", num_samples=60000,
                          shuffle=True, seed=1, source_field="source")
    loader = io.DataLoader(mix, batch_size=500, num_workers=2)
    source = np.concatenate([batch["source"] for batch in loader])
    assert source.size == 60000
    counts = np.stack([np.concatenate([[0], np.cumsum(source == k)]) for k in range(3)])
    windows = (counts[:, 10000:] - counts[:, :-10000]) / 10000
    assert np.abs(windows - np.array([[0.5], [0.3], [0.2]])).max() <= 0.005


def test_mixing_resumes_mid_epoch_with_the_same_rows():
    sources = token_sources([500, 300, 200])

    def loader(workers):
        mix = io.MixedDataset(sources, [0.5, 0.3, 0.2], stopping="all_exhausted", shuffle=True,
                              seed=3)
        return io.DataLoader(mix, batch_size=16, num_workers=workers, seed=0)

    expected = [b["input_ids"][:, 0].tolist() for b in loader(0)]
    first = loader(2)
    head = []
    for i, batch in enumerate(first):
        head.append(batch["input_ids"][:, 0].tolist())
        if i == 9:
            break
    state = first.state_dict()
    second = loader(3)
    second.load_state_dict(state)
    assert head + [b["input_ids"][:, 0].tolist() for b in second] == expected


def test_mixing_resumes_with_new_weights_losing_and_repeating_nothing():
    sources = token_sources([600, 600, 600])
    first = io.MixedDataset(sources, [0.5, 0.3, 0.2], shuffle=True, seed=9)
    loader = io.DataLoader(first, batch_size=10)
    seen = []
    for i, batch in enumerate(loader):
        seen += batch["input_ids"][:, 0].tolist()
        if i == 29:
            break
    position = loader.state_dict()["next_batch"] * 10
    state = first.state_at(position)
    second = io.MixedDataset(sources, [0.1, 0.1, 0.8], shuffle=True, seed=9, start=state["draws"])
    rest = [t for b in io.DataLoader(second, batch_size=10) for t in b["input_ids"][:, 0].tolist()]
    rows = seen + rest
    assert len(rows) == len(set(rows))
    # Source 2 runs out first under the new weights: every one of its rows came.
    assert sorted(t for t in rows if t >= 2 * 10**6) == list(range(2 * 10**6, 2 * 10**6 + 600))
    tail = np.array([t // 10**6 for t in rest[:600]])
    assert abs((tail == 2).mean() - 0.8) < 0.01


def test_a_mix_of_token_sources_packs():
    sources = token_sources([300, 200], length=7)
    mix = io.MixedDataset(sources, [0.6, 0.4], shuffle=True, seed=2)
    rows = rows_of(io.DataLoader(mix, batch_size=4, pack=io.PackOptions(64, strategy="best_fit")))
    tokens = [t for ids, _, _, seg, _ in rows for t, s in zip(ids, seg) if s]
    assert len(tokens) == 7 * len(mix)
    with pytest.raises(TypeError, match="is not native"):
        io.MixedDataset([PythonDocuments(sources[0])], [1.0])
    with pytest.raises(ValueError, match="stopping must be one of"):
        io.MixedDataset(sources, [1, 1], stopping="first")
    with pytest.raises(ValueError, match="needs num_samples"):
        io.MixedDataset(sources, [1, 1], stopping="never")


def test_the_torch_swap_packs_too():
    import torch
    import feedline.torch

    docs = unique_documents(long_tailed_lengths(200, seed=6))
    pack = io.PackOptions(128, max_segments=6)
    expected = rows_of(io.DataLoader(docs, batch_size=4, shuffle=True, seed=3, pack=pack))
    loader = feedline.torch.DataLoader(docs, batch_size=4, shuffle=True, seed=3, num_workers=2,
                                       pack=pack)
    got = []
    for batch in loader:
        assert batch["input_ids"].dtype == torch.int64
        assert batch["cu_seqlens"].dtype == torch.int32
        for r in range(batch["input_ids"].shape[0]):
            got.append(tuple(batch[f][r].tolist() for f in
                             ("input_ids", "labels", "position_ids", "segment_ids", "cu_seqlens")))
    assert got == expected


def test_ranks_take_equal_steps_and_resume_at_another_world_size():
    docs = unique_documents(long_tailed_lengths(900, seed=8))
    batch = 3

    def loader(ranks, rank, workers=0):
        pack = io.PackOptions(256, max_segments=8, num_replicas=ranks, rank=rank)
        return io.DataLoader(docs, batch_size=batch, shuffle=True, seed=4, num_workers=workers,
                             pack=pack)

    def batches(dl, limit=None):
        out = []
        for i, b in enumerate(dl):
            out.append([tuple(r) for r in b["input_ids"].tolist()])
            if limit is not None and i + 1 == limit:
                break
        return out

    every = [row for b in batches(loader(1, 0)) for row in b]  # the epoch's rows in order
    two = [batches(loader(2, r, workers=r)) for r in range(2)]
    assert len(two[0]) == len(two[1]) == -(-len(every) // (2 * batch))
    for s in range(len(two[0])):
        for r in range(2):
            at = (s * 2 + r) * batch
            assert two[r][s] == [every[(at + j) % len(every)] for j in range(batch)]

    # A job of 2 ranks takes 5 steps and checkpoints; 3 ranks go on.
    first = loader(2, 0)
    batches(first, limit=5)
    state = first.state_dict()
    assert state["pack_position"]["rows"] == 5 * 2 * batch
    rest = []
    steps = set()
    for r in range(3):
        resumed = loader(3, r, workers=1)
        resumed.load_state_dict(state)
        taken = batches(resumed)
        steps.add(len(taken))
        rest += [row for b in taken for row in b]
    assert len(steps) == 1
    assert set(rest) == set(every[5 * 2 * batch:])
    assert len(rest) - len(set(rest)) < 3 * batch  # only the last step's filling repeats

    # The same job resumes exactly, as without ranks.
    again = loader(2, 0)
    again.load_state_dict(state)
    assert batches(again) == two[0][5:]
    with pytest.raises(ValueError, match="rank must be below num_replicas"):
        io.PackOptions(8, num_replicas=2, rank=2)


def test_token_dataset_takes_int32_as_it_is_and_checks_wider_ids():
    docs = io.TokenDataset(np.array([5, 6, 7], np.int32), [0, 2, 3])
    assert docs[0]["input_ids"].tolist() == [5, 6] and docs.lengths.tolist() == [2, 1]
    assert io.TokenDataset(np.array([5, 6, 7], np.int64)[::-1], [0, 3])[0]["input_ids"].tolist() \
        == [7, 6, 5]
    with pytest.raises(ValueError, match="does not fit in 32 bits"):
        io.TokenDataset(np.array([1, 2**40]), [0, 2])
    with pytest.raises(ValueError, match="offsets must not decrease"):
        io.TokenDataset(np.array([1, 2]), [0, 2, 1])
    with pytest.raises(TypeError, match="tokens must be integers"):
        io.TokenDataset(np.array([1.5]), [0, 1])
    with pytest.raises(ValueError, match="sample 1 has no field 'input_ids'"):
        io.TokenDataset.from_dataset([{"input_ids": [1]}, {"text": "x"}])


def test_a_mix_split_across_ranks_resumes_at_another_world_size():
    sources = token_sources([300, 200, 100])
    mix = io.MixedDataset(sources, [0.5, 0.3, 0.2], shuffle=True, seed=4)

    def loader(ranks, rank):
        sampler = io.DistributedBatchSampler(mix, 4, num_replicas=ranks, rank=rank, pad=False)
        return io.DataLoader(mix, batch_sampler=sampler, num_workers=1, seed=0)

    def take(dl, steps, seen):
        for step, batch in enumerate(dl):
            seen += batch["input_ids"][:, 0].tolist()
            if steps is not None and step + 1 == steps:
                break
        return dl.state_dict()

    seen = []
    states = [take(loader(2, r), 5, seen) for r in range(2)]
    # Together the ranks took the mix's first 40 positions: its blend.
    assert sorted(seen) == sorted(mix[i]["input_ids"][0] for i in range(40))
    rest = []
    for r in range(3):
        resumed = loader(3, r)
        resumed.load_state_dict(states[r % 2])
        take(resumed, None, rest)
    assert sorted(seen + rest) == sorted(mix[i]["input_ids"][0] for i in range(len(mix)))


def test_token_budget_batches_read_a_token_datasets_lengths_natively():
    lengths = long_tailed_lengths(500, seed=9, scale=4.0)
    docs = unique_documents(lengths)
    native = io.DynamicBatchSampler(docs, max_tokens=1024, seed=2)
    from_list = io.DynamicBatchSampler(lengths.tolist(), max_tokens=1024, seed=2)
    assert native.lengths is None
    for epoch in (0, 1):
        a, b = native._native.plan(epoch), from_list._native.plan(epoch)
        assert a[0].tolist() == b[0].tolist() and a[1].tolist() == b[1].tolist()
    seen = []
    for batch in io.DataLoader(docs, batch_sampler=native):
        ids = batch["input_ids"]
        # Lengths come with a batch whose documents needed padding.
        n = batch.get("input_ids_lengths", np.full(ids.shape[0], ids.shape[1]))
        assert ids.shape[0] * ids.shape[1] <= 1024 or ids.shape[0] == 1
        seen += [ids[r, 0] for r in range(ids.shape[0]) if n[r]]
    assert len(seen) == int((lengths > 0).sum())
