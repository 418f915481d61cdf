"""The documented calls of USAGE_CONTRACT.md that this version covers, run as written
(``zoo.orca`` replaced by ``zoo_lite``). The XShards.partition snippet is in tests/data/test_shard.py."""

from __future__ import annotations

import pandas as pd


def test_data_parallel_pandas_snippet_runs_unchanged(sc, tmp_path):
    frame = pd.DataFrame({"location": ["paris", "lyon", "nice", "lyon", "paris", "brest"] * 5, "value": range(30)})
    for index in range(3):
        frame.iloc[index * 10:(index + 1) * 10].to_csv(tmp_path / f"part-{index}.csv", index=False)

    # --- documented usage, unchanged ---
    from zoo_lite.data.pandas import read_csv
    shard = read_csv(str(tmp_path))

    def negative(df, column_name):
        df[column_name] = df[column_name] * (-1)
        return df

    train_shards = shard.transform_shard(negative, 'value')
    shard.partition_by(cols="location", num_partitions=4)
    location_list = shard["location"].unique()
    # --- end of documented usage ---

    assert sorted(location_list) == ["brest", "lyon", "nice", "paris"]
    assert sorted(train_shards.concat_to_pdf()["value"]) == sorted(-frame["value"])
    partitioned = shard.partition_by(cols="location", num_partitions=4)
    assert partitioned.num_partitions() == 4
    homes = {location: [i for i, part in enumerate(partitioned.collect()) if location in set(part["location"])] for location in location_list}
    assert all(len(found) == 1 for found in homes.values())


def _regression_data(rows: int = 64):
    import torch

    generator = torch.Generator().manual_seed(0)
    x = torch.randn(rows, 3, generator=generator)
    return torch.utils.data.TensorDataset(x, x @ torch.tensor([[1.0], [-2.0], [0.5]]))


def test_pytorch_dataloader_snippet_runs_unchanged(sc):
    import torch

    dataset, batch_size = _regression_data(), 16
    torch_model = torch.nn.Linear(3, 1)
    torch_optim = torch.optim.SGD(torch_model.parameters(), lr=0.1)
    torch_criterion = torch.nn.MSELoss()

    # --- documented usage, unchanged ---
    from zoo_lite.learn.pytorch import Estimator
    train_loader = torch.utils.data.DataLoader(dataset, batch_size=batch_size, shuffle=True)
    est = Estimator.from_torch(model=torch_model, optimizer=torch_optim, loss=torch_criterion)
    est.fit(data=train_loader)               # instances, not creators
    # --- end of documented usage ---

    try:
        history = est.fit(data=train_loader, epochs=5)
        assert [h["num_samples"] for h in history] == [64] * 5
        assert history[-1]["train_loss"] < history[0]["train_loss"]
    finally:
        est.shutdown()


def test_pytorch_data_creator_snippets_run_unchanged_in_both_signatures(sc):
    import torch

    ds = _regression_data()
    from zoo_lite.learn.pytorch import Estimator

    # --- documented usage, unchanged: the guide's form ---
    def train_data_creator(config):
        return torch.utils.data.DataLoader(ds, batch_size=config["batch_size"], shuffle=True)
    # --- end of documented usage ---

    def later_form_creator(config, batch_size):
        return torch.utils.data.DataLoader(ds, batch_size=batch_size, shuffle=True)

    model = torch.nn.Linear(3, 1)
    est = Estimator.from_torch(model=model, optimizer=torch.optim.SGD(model.parameters(), lr=0.1),
                               loss=torch.nn.MSELoss(), config={"batch_size": 8})
    try:
        guide = est.fit(data=train_data_creator, epochs=2)
        later = est.fit(data=later_form_creator, epochs=2, batch_size=32)
        assert [h["num_samples"] for h in guide + later] == [64] * 4
        assert est.evaluate(data=train_data_creator)["num_samples"] == 64
    finally:
        est.shutdown()
