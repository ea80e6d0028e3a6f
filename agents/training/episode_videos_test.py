"""Tests of the output folder of recorded episodes."""

import json
import os

import numpy as np
import pytest

from agents.training import episode_videos


def test_check_outdir_refuses_a_file(tmp_path):
    path = tmp_path / 'file'
    path.write_text('')
    with pytest.raises(episode_videos.VisualizeError) as error:
        episode_videos.check_outdir(str(path))
    assert str(error.value) == f'--outdir {path} is not a directory.'
    episode_videos.check_outdir(str(tmp_path / 'new' / 'deeper'))
    assert not (tmp_path / 'new').exists()


def test_kept_episodes_and_statistics(tmp_path):
    outdir = str(tmp_path)
    episodes = []
    for index, (agent, episode_return, length) in enumerate(
            [(1, np.float32(-2.5), 4), (0, 3.0, 7)]):
        recording = os.path.join(outdir, f'.recording-{index}.mp4')
        with open(recording, 'w', encoding='utf-8') as file_:
            file_.write(str(index))
        episodes.append(episode_videos.keep_episode(
            recording, outdir, index, 1001, np.int64(agent), episode_return,
            length))
    leftover = os.path.join(outdir, '.recording-9.mp4')
    with open(leftover, 'w', encoding='utf-8') as file_:
        file_.write('9')
    episode_videos.remove_recordings(outdir)
    # Four digits number 1,001 episodes.
    assert sorted(os.listdir(outdir)) == [
        'episode-0000.mp4', 'episode-0001.mp4']
    statistics = episode_videos.write_statistics(
        outdir, dict(env='Pendulum-v1', seed=None), episodes)
    expected = {
        'env': 'Pendulum-v1', 'seed': None, 'mean_return': 0.25,
        'episodes': [
            {'index': 0, 'agent': 1, 'return': -2.5, 'length': 4,
             'frames': 5, 'video': 'episode-0000.mp4'},
            {'index': 1, 'agent': 0, 'return': 3.0, 'length': 7,
             'frames': 8, 'video': 'episode-0001.mp4'}]}
    assert statistics == expected
    with open(os.path.join(outdir, 'episodes.json'), encoding='utf-8') as file_:
        assert list(json.load(file_).items()) == list(expected.items())
