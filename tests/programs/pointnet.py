"""Point-cloud classification three ways, in the idioms of charlesq34/pointnet's PyTorch ports (fxia22/pointnet.pytorch,
yanx27/Pointnet_Pointnet2_pytorch) and of WangYueFT/dgcnn, run unchanged under torch and under `python -m
retrograd.run`: 64-point clouds of four synthetic shapes (sphere, cube surface, cylinder, cone) from NumPy's seeded
generator, centred and scaled to the unit ball. Part 1, PointNet (fxia22): a `Dataset` whose `__getitem__` rotates
each cloud about the up axis by a 2x2 rotation on columns [0, 2] and jitters it with `np.random` (seeded), a
`DataLoader(shuffle=True)`; the STN3d / STNkd T-Nets (`Conv1d(.., 1)`, `BatchNorm1d`, `torch.max(x, 2,
keepdim=True)[0]`, `x.view(-1, EMB)`, a flattened identity from `torch.from_numpy(np.eye(k).flatten().astype(
np.float32)).view(1, k * k).repeat(batchsize, 1)`, the 3x3 one through `Variable`), `torch.bmm` of the transposed
points with the predicted transform, the feature-transform regulariser `torch.mean(torch.norm(torch.bmm(trans,
trans.transpose(2, 1)) - I, dim=(1, 2)))`, `F.log_softmax` + `F.nll_loss`, Adam under `StepLR`, accuracy by
`pred.data.max(1)[1].eq(target.data).cpu().sum()`; then the dense (segmentation) head on the global feature
`view(-1, EMB, 1).repeat(1, 1, n_pts)` concatenated with the point features, per-point labels. Part 2, DGCNN's
EdgeConv: `knn` by `-xx - inner - xx.transpose(2, 1)` and `topk(k=k, dim=-1)[1]`, `get_graph_feature` by index
arithmetic (`idx + idx_base`, `idx.view(-1)`, `x.view(batch_size * num_points, -1)[idx, :]`, `torch.cat((feature -
x, x), dim=3).permute(0, 3, 1, 2).contiguous()`), `Conv2d(kernel_size=1, bias=False)` in an `nn.Sequential` sharing
its BatchNorm with an attribute, `LeakyReLU(negative_slope=0.2)`, max over neighbours, `F.adaptive_max_pool1d` and
`F.adaptive_avg_pool1d` concatenated, `cal_loss`'s hand-written label smoothing (`torch.zeros_like(pred).scatter(1,
gold.view(-1, 1), 1)`), SGD with momentum and weight decay under `CosineAnnealingLR(eta_min=..)`, DGCNN's
`translate_pointcloud` augmentation and accuracies from concatenated NumPy predictions. Part 3, PointNet++ SSG
(yanx27): `square_distance`, `farthest_point_sample` (a `torch.randint` start, a loop of masked distance updates and
`torch.max(distance, -1)[1]`), `index_points` by advanced indexing with repeated batch indices, `query_ball_point`
(`group_idx[sqrdists > radius ** 2] = N`, `sort`, the first neighbour filling the mask), `sample_and_group(_all)`,
set abstraction by `Conv2d` + `BatchNorm2d` and `torch.max(new_points, 2)[0]`, provider's random point dropout,
scaling and shifting on `points.data.numpy()`, and the per-class test accuracy over `np.unique(target.cpu())`.
Evaluation in `eval()` mode under `torch.no_grad()`. Trained in float64 (`torch.set_default_dtype`, under which
`torch.Tensor(points)` and the float32 identities promote): Adam on these batch-normed nets turns float32's rounding
into different runs within a few steps. `WEIGHTS=path` shares the initial weights
(tests/programs/_draws.py shares the shuffles and the sampling starts)."""
# ruff: noqa: UP008, UP031, UP032, UP034 - the repositories' own super(Class, self), %-format and .format logging

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
import torch.utils.data as data
from _weights import share_initial_weights
from torch.autograd import Variable

torch.manual_seed(0)
np.random.seed(0)
# float64: Adam's first steps turn the rounding noise of the gradients that batch norm makes zero (the biases before
# it) into full-size steps of either sign, and float32's rounding would part the two libraries within a few steps
torch.set_default_dtype(torch.float64)
NUM_POINTS, CLASSES, PER_CLASS, TEST_PER_CLASS, BATCH, EMB = 64, 4, 12, 4, 16, 64
SHAPES = ("sphere", "cube", "cylinder", "cone")

rng = np.random.default_rng(0)


def sample_shape(kind, n):
    """n points on the surface of a unit shape, stretched a little along each axis."""
    if kind == "sphere":
        p = rng.normal(size=(n, 3))
        p /= np.linalg.norm(p, axis=1, keepdims=True)
    elif kind == "cube":
        p = rng.uniform(-1, 1, (n, 3))
        face = rng.integers(0, 3, n)
        p[np.arange(n), face] = rng.choice([-1.0, 1.0], n)
    elif kind == "cylinder":
        theta, h = rng.uniform(0, 2 * np.pi, n), rng.uniform(-1, 1, n)
        p = np.stack([np.cos(theta), h, np.sin(theta)], axis=1)
    else:
        theta, h = rng.uniform(0, 2 * np.pi, n), rng.uniform(0, 1, n)
        p = np.stack([(1 - h) * np.cos(theta), 2 * h - 1, (1 - h) * np.sin(theta)], axis=1)
    return p * rng.uniform(0.8, 1.2, 3)


def pc_normalize(pc):
    centroid = np.mean(pc, axis=0)
    pc = pc - centroid
    m = np.max(np.sqrt(np.sum(pc ** 2, axis=1)))
    return pc / m


def make_split(per_class):
    clouds = np.stack([pc_normalize(sample_shape(kind, NUM_POINTS)) for kind in SHAPES for _ in range(per_class)])
    return clouds, np.repeat(np.arange(CLASSES), per_class)


train_points, train_labels = make_split(PER_CLASS)
test_points, test_labels = make_split(TEST_PER_CLASS)
print(f"train {train_points.shape} test {test_points.shape} mean radius "
      f"{np.linalg.norm(train_points, axis=2).mean():.6f}")


# ---------------------------------------------------------------- Part 1: PointNet (fxia22/pointnet.pytorch)
class ShapeDataset(data.Dataset):
    def __init__(self, points, labels, data_augmentation=True):
        self.points, self.labels, self.data_augmentation = points, labels, data_augmentation

    def __getitem__(self, index):
        point_set = self.points[index].copy()
        cls = self.labels[index]
        point_set = point_set - np.expand_dims(np.mean(point_set, axis=0), 0)  # center
        dist = np.max(np.sqrt(np.sum(point_set ** 2, axis=1)), 0)
        point_set = point_set / dist  # scale
        if self.data_augmentation:
            theta = np.random.uniform(0, np.pi * 2)
            rotation_matrix = np.array([[np.cos(theta), -np.sin(theta)], [np.sin(theta), np.cos(theta)]])
            point_set[:, [0, 2]] = point_set[:, [0, 2]].dot(rotation_matrix)  # random rotation
            point_set += np.random.normal(0, 0.02, size=point_set.shape)  # random jitter
        point_set = torch.from_numpy(point_set.astype(np.float64))
        cls = torch.from_numpy(np.array([cls]).astype(np.int64))
        return point_set, cls

    def __len__(self):
        return len(self.labels)


class STN3d(nn.Module):
    def __init__(self):
        super(STN3d, self).__init__()
        self.conv1 = torch.nn.Conv1d(3, 16, 1)
        self.conv2 = torch.nn.Conv1d(16, 32, 1)
        self.conv3 = torch.nn.Conv1d(32, EMB, 1)
        self.fc1 = nn.Linear(EMB, 32)
        self.fc2 = nn.Linear(32, 16)
        self.fc3 = nn.Linear(16, 9)
        self.relu = nn.ReLU()
        self.bn1 = nn.BatchNorm1d(16)
        self.bn2 = nn.BatchNorm1d(32)
        self.bn3 = nn.BatchNorm1d(EMB)
        self.bn4 = nn.BatchNorm1d(32)
        self.bn5 = nn.BatchNorm1d(16)

    def forward(self, x):
        batchsize = x.size()[0]
        x = F.relu(self.bn1(self.conv1(x)))
        x = F.relu(self.bn2(self.conv2(x)))
        x = F.relu(self.bn3(self.conv3(x)))
        x = torch.max(x, 2, keepdim=True)[0]
        x = x.view(-1, EMB)
        x = F.relu(self.bn4(self.fc1(x)))
        x = F.relu(self.bn5(self.fc2(x)))
        x = self.fc3(x)
        iden = Variable(torch.from_numpy(np.array([1, 0, 0, 0, 1, 0, 0, 0, 1]).astype(np.float32))).view(1, 9).repeat(
            batchsize, 1)
        if x.is_cuda:
            iden = iden.cuda()
        x = x + iden
        x = x.view(-1, 3, 3)
        return x


class STNkd(nn.Module):
    def __init__(self, k=16):
        super(STNkd, self).__init__()
        self.conv1 = torch.nn.Conv1d(k, 16, 1)
        self.conv2 = torch.nn.Conv1d(16, 32, 1)
        self.conv3 = torch.nn.Conv1d(32, EMB, 1)
        self.fc1 = nn.Linear(EMB, 32)
        self.fc2 = nn.Linear(32, 32)
        self.fc3 = nn.Linear(32, k * k)
        self.relu = nn.ReLU()
        self.bn1 = nn.BatchNorm1d(16)
        self.bn2 = nn.BatchNorm1d(32)
        self.bn3 = nn.BatchNorm1d(EMB)
        self.bn4 = nn.BatchNorm1d(32)
        self.bn5 = nn.BatchNorm1d(32)
        self.k = k

    def forward(self, x):
        batchsize = x.size()[0]
        x = F.relu(self.bn1(self.conv1(x)))
        x = F.relu(self.bn2(self.conv2(x)))
        x = F.relu(self.bn3(self.conv3(x)))
        x = torch.max(x, 2, keepdim=True)[0]
        x = x.view(-1, EMB)
        x = F.relu(self.bn4(self.fc1(x)))
        x = F.relu(self.bn5(self.fc2(x)))
        x = self.fc3(x)
        iden = torch.from_numpy(np.eye(self.k).flatten().astype(np.float32)).view(1, self.k * self.k).repeat(
            batchsize, 1)
        if x.is_cuda:
            iden = iden.cuda()
        x = x + iden
        x = x.view(-1, self.k, self.k)
        return x


class PointNetfeat(nn.Module):
    def __init__(self, global_feat=True, feature_transform=False):
        super(PointNetfeat, self).__init__()
        self.stn = STN3d()
        self.conv1 = torch.nn.Conv1d(3, 16, 1)
        self.conv2 = torch.nn.Conv1d(16, 32, 1)
        self.conv3 = torch.nn.Conv1d(32, EMB, 1)
        self.bn1 = nn.BatchNorm1d(16)
        self.bn2 = nn.BatchNorm1d(32)
        self.bn3 = nn.BatchNorm1d(EMB)
        self.global_feat = global_feat
        self.feature_transform = feature_transform
        if self.feature_transform:
            self.fstn = STNkd(k=16)

    def forward(self, x):
        n_pts = x.size()[2]
        trans = self.stn(x)
        x = x.transpose(2, 1)
        x = torch.bmm(x, trans)
        x = x.transpose(2, 1)
        x = F.relu(self.bn1(self.conv1(x)))
        if self.feature_transform:
            trans_feat = self.fstn(x)
            x = x.transpose(2, 1)
            x = torch.bmm(x, trans_feat)
            x = x.transpose(2, 1)
        else:
            trans_feat = None
        pointfeat = x
        x = F.relu(self.bn2(self.conv2(x)))
        x = self.bn3(self.conv3(x))
        x = torch.max(x, 2, keepdim=True)[0]
        x = x.view(-1, EMB)
        if self.global_feat:
            return x, trans, trans_feat
        x = x.view(-1, EMB, 1).repeat(1, 1, n_pts)
        return torch.cat([x, pointfeat], 1), trans, trans_feat


class PointNetCls(nn.Module):
    def __init__(self, k=2, feature_transform=False):
        super(PointNetCls, self).__init__()
        self.feature_transform = feature_transform
        self.feat = PointNetfeat(global_feat=True, feature_transform=feature_transform)
        self.fc1 = nn.Linear(EMB, 32)
        self.fc2 = nn.Linear(32, 16)
        self.fc3 = nn.Linear(16, k)
        self.dropout = nn.Dropout(p=0.3)
        self.bn1 = nn.BatchNorm1d(32)
        self.bn2 = nn.BatchNorm1d(16)
        self.relu = nn.ReLU()

    def forward(self, x):
        x, trans, trans_feat = self.feat(x)
        x = F.relu(self.bn1(self.fc1(x)))
        x = F.relu(self.bn2(self.dropout(self.fc2(x))))
        x = self.fc3(x)
        return F.log_softmax(x, dim=1), trans, trans_feat


class PointNetDenseCls(nn.Module):
    def __init__(self, k=2, feature_transform=False):
        super(PointNetDenseCls, self).__init__()
        self.k = k
        self.feature_transform = feature_transform
        self.feat = PointNetfeat(global_feat=False, feature_transform=feature_transform)
        self.conv1 = torch.nn.Conv1d(EMB + 16, 32, 1)
        self.conv2 = torch.nn.Conv1d(32, 16, 1)
        self.conv3 = torch.nn.Conv1d(16, self.k, 1)
        self.bn1 = nn.BatchNorm1d(32)
        self.bn2 = nn.BatchNorm1d(16)

    def forward(self, x):
        batchsize = x.size()[0]
        n_pts = x.size()[2]
        x, trans, trans_feat = self.feat(x)
        x = F.relu(self.bn1(self.conv1(x)))
        x = F.relu(self.bn2(self.conv2(x)))
        x = self.conv3(x)
        x = x.transpose(2, 1).contiguous()
        x = F.log_softmax(x.view(-1, self.k), dim=-1)
        x = x.view(batchsize, n_pts, self.k)
        return x, trans, trans_feat


def feature_transform_regularizer(trans):
    d = trans.size()[1]
    I = torch.eye(d)[None, :, :]
    if trans.is_cuda:
        I = I.cuda()
    loss = torch.mean(torch.norm(torch.bmm(trans, trans.transpose(2, 1)) - I, dim=(1, 2)))
    return loss


# ---------------------------------------------------------------- Part 2: DGCNN (WangYueFT/dgcnn)
def knn(x, k):
    inner = -2 * torch.matmul(x.transpose(2, 1), x)
    xx = torch.sum(x ** 2, dim=1, keepdim=True)
    pairwise_distance = -xx - inner - xx.transpose(2, 1)
    idx = pairwise_distance.topk(k=k, dim=-1)[1]  # (batch_size, num_points, k)
    return idx


def get_graph_feature(x, k=20, idx=None):
    batch_size = x.size(0)
    num_points = x.size(2)
    x = x.view(batch_size, -1, num_points)
    if idx is None:
        idx = knn(x, k=k)  # (batch_size, num_points, k)
    device = torch.device('cpu')
    idx_base = torch.arange(0, batch_size, device=device).view(-1, 1, 1) * num_points
    idx = idx + idx_base
    idx = idx.view(-1)
    _, num_dims, _ = x.size()
    x = x.transpose(2, 1).contiguous()  # (batch_size, num_points, num_dims)
    feature = x.view(batch_size * num_points, -1)[idx, :]
    feature = feature.view(batch_size, num_points, k, num_dims)
    x = x.view(batch_size, num_points, 1, num_dims).repeat(1, 1, k, 1)
    feature = torch.cat((feature - x, x), dim=3).permute(0, 3, 1, 2).contiguous()
    return feature


class DGCNN(nn.Module):
    def __init__(self, k=8, emb_dims=32, dropout=0.5, output_channels=40):
        super(DGCNN, self).__init__()
        self.k = k
        self.bn1 = nn.BatchNorm2d(16)
        self.bn2 = nn.BatchNorm2d(16)
        self.bn3 = nn.BatchNorm2d(32)
        self.bn5 = nn.BatchNorm1d(emb_dims)
        self.conv1 = nn.Sequential(nn.Conv2d(6, 16, kernel_size=1, bias=False), self.bn1,
                                   nn.LeakyReLU(negative_slope=0.2))
        self.conv2 = nn.Sequential(nn.Conv2d(16 * 2, 16, kernel_size=1, bias=False), self.bn2,
                                   nn.LeakyReLU(negative_slope=0.2))
        self.conv3 = nn.Sequential(nn.Conv2d(16 * 2, 32, kernel_size=1, bias=False), self.bn3,
                                   nn.LeakyReLU(negative_slope=0.2))
        self.conv5 = nn.Sequential(nn.Conv1d(64, emb_dims, kernel_size=1, bias=False), self.bn5,
                                   nn.LeakyReLU(negative_slope=0.2))
        self.linear1 = nn.Linear(emb_dims * 2, 32, bias=False)
        self.bn6 = nn.BatchNorm1d(32)
        self.dp1 = nn.Dropout(p=dropout)
        self.linear2 = nn.Linear(32, 16)
        self.bn7 = nn.BatchNorm1d(16)
        self.dp2 = nn.Dropout(p=dropout)
        self.linear3 = nn.Linear(16, output_channels)

    def forward(self, x):
        batch_size = x.size(0)
        x = get_graph_feature(x, k=self.k)
        x = self.conv1(x)
        x1 = x.max(dim=-1, keepdim=False)[0]
        x = get_graph_feature(x1, k=self.k)
        x = self.conv2(x)
        x2 = x.max(dim=-1, keepdim=False)[0]
        x = get_graph_feature(x2, k=self.k)
        x = self.conv3(x)
        x3 = x.max(dim=-1, keepdim=False)[0]
        x = torch.cat((x1, x2, x3), dim=1)
        x = self.conv5(x)
        x1 = F.adaptive_max_pool1d(x, 1).view(batch_size, -1)
        x2 = F.adaptive_avg_pool1d(x, 1).view(batch_size, -1)
        x = torch.cat((x1, x2), 1)
        x = F.leaky_relu(self.bn6(self.linear1(x)), negative_slope=0.2)
        x = self.dp1(x)
        x = F.leaky_relu(self.bn7(self.linear2(x)), negative_slope=0.2)
        x = self.dp2(x)
        x = self.linear3(x)
        return x


def cal_loss(pred, gold, smoothing=True):
    """Calculate cross entropy loss, apply label smoothing if needed."""
    gold = gold.contiguous().view(-1)
    if smoothing:
        eps = 0.2
        n_class = pred.size(1)
        one_hot = torch.zeros_like(pred).scatter(1, gold.view(-1, 1), 1)
        one_hot = one_hot * (1 - eps) + (1 - one_hot) * eps / (n_class - 1)
        log_prb = F.log_softmax(pred, dim=1)
        loss = -(one_hot * log_prb).sum(dim=1).mean()
    else:
        loss = F.cross_entropy(pred, gold, reduction='mean')
    return loss


def translate_pointcloud(pointcloud):
    xyz1 = np.random.uniform(low=2. / 3., high=3. / 2., size=[3])
    xyz2 = np.random.uniform(low=-0.2, high=0.2, size=[3])
    translated_pointcloud = np.add(np.multiply(pointcloud, xyz1), xyz2).astype('float64')
    return translated_pointcloud


class ModelNet40(data.Dataset):
    def __init__(self, points, labels, partition='train'):
        self.data, self.label, self.partition = points, labels.reshape(-1, 1), partition

    def __getitem__(self, item):
        pointcloud = self.data[item][:NUM_POINTS]
        label = self.label[item]
        if self.partition == 'train':
            pointcloud = translate_pointcloud(pointcloud)
            np.random.shuffle(pointcloud)
        return pointcloud, label

    def __len__(self):
        return self.data.shape[0]


# ---------------------------------------------------------------- Part 3: PointNet++ SSG (yanx27)
def square_distance(src, dst):
    B, N, _ = src.shape
    _, M, _ = dst.shape
    dist = -2 * torch.matmul(src, dst.permute(0, 2, 1))
    dist += torch.sum(src ** 2, -1).view(B, N, 1)
    dist += torch.sum(dst ** 2, -1).view(B, 1, M)
    return dist


def index_points(points, idx):
    device = points.device
    B = points.shape[0]
    view_shape = list(idx.shape)
    view_shape[1:] = [1] * (len(view_shape) - 1)
    repeat_shape = list(idx.shape)
    repeat_shape[0] = 1
    batch_indices = torch.arange(B, dtype=torch.long).to(device).view(view_shape).repeat(repeat_shape)
    new_points = points[batch_indices, idx, :]
    return new_points


def farthest_point_sample(xyz, npoint):
    device = xyz.device
    B, N, C = xyz.shape
    centroids = torch.zeros(B, npoint, dtype=torch.long).to(device)
    distance = torch.ones(B, N).to(device) * 1e10
    farthest = torch.randint(0, N, (B,), dtype=torch.long).to(device)
    batch_indices = torch.arange(B, dtype=torch.long).to(device)
    for i in range(npoint):
        centroids[:, i] = farthest
        centroid = xyz[batch_indices, farthest, :].view(B, 1, 3)
        dist = torch.sum((xyz - centroid) ** 2, -1)
        mask = dist < distance
        distance[mask] = dist[mask]
        farthest = torch.max(distance, -1)[1]
    return centroids


def query_ball_point(radius, nsample, xyz, new_xyz):
    device = xyz.device
    B, N, C = xyz.shape
    _, S, _ = new_xyz.shape
    group_idx = torch.arange(N, dtype=torch.long).to(device).view(1, 1, N).repeat([B, S, 1])
    sqrdists = square_distance(new_xyz, xyz)
    group_idx[sqrdists > radius ** 2] = N
    group_idx = group_idx.sort(dim=-1)[0][:, :, :nsample]
    group_first = group_idx[:, :, 0].view(B, S, 1).repeat([1, 1, nsample])
    mask = group_idx == N
    group_idx[mask] = group_first[mask]
    return group_idx


def sample_and_group(npoint, radius, nsample, xyz, points):
    B, N, C = xyz.shape
    S = npoint
    fps_idx = farthest_point_sample(xyz, npoint)  # [B, npoint]
    new_xyz = index_points(xyz, fps_idx)
    idx = query_ball_point(radius, nsample, xyz, new_xyz)
    grouped_xyz = index_points(xyz, idx)  # [B, npoint, nsample, C]
    grouped_xyz_norm = grouped_xyz - new_xyz.view(B, S, 1, C)
    if points is not None:
        grouped_points = index_points(points, idx)
        new_points = torch.cat([grouped_xyz_norm, grouped_points], dim=-1)  # [B, npoint, nsample, C+D]
    else:
        new_points = grouped_xyz_norm
    return new_xyz, new_points


def sample_and_group_all(xyz, points):
    device = xyz.device
    B, N, C = xyz.shape
    new_xyz = torch.zeros(B, 1, C).to(device)
    grouped_xyz = xyz.view(B, 1, N, C)
    if points is not None:
        new_points = torch.cat([grouped_xyz, points.view(B, 1, N, -1)], dim=-1)
    else:
        new_points = grouped_xyz
    return new_xyz, new_points


class PointNetSetAbstraction(nn.Module):
    def __init__(self, npoint, radius, nsample, in_channel, mlp, group_all):
        super(PointNetSetAbstraction, self).__init__()
        self.npoint = npoint
        self.radius = radius
        self.nsample = nsample
        self.mlp_convs = nn.ModuleList()
        self.mlp_bns = nn.ModuleList()
        last_channel = in_channel
        for out_channel in mlp:
            self.mlp_convs.append(nn.Conv2d(last_channel, out_channel, 1))
            self.mlp_bns.append(nn.BatchNorm2d(out_channel))
            last_channel = out_channel
        self.group_all = group_all

    def forward(self, xyz, points):
        xyz = xyz.permute(0, 2, 1)
        if points is not None:
            points = points.permute(0, 2, 1)
        if self.group_all:
            new_xyz, new_points = sample_and_group_all(xyz, points)
        else:
            new_xyz, new_points = sample_and_group(self.npoint, self.radius, self.nsample, xyz, points)
        new_points = new_points.permute(0, 3, 2, 1)  # [B, C+D, nsample, npoint]
        for i, conv in enumerate(self.mlp_convs):
            bn = self.mlp_bns[i]
            new_points = F.relu(bn(conv(new_points)))
        new_points = torch.max(new_points, 2)[0]
        new_xyz = new_xyz.permute(0, 2, 1)
        return new_xyz, new_points


class get_model(nn.Module):
    def __init__(self, num_class, normal_channel=False):
        super(get_model, self).__init__()
        in_channel = 6 if normal_channel else 3
        self.normal_channel = normal_channel
        self.sa1 = PointNetSetAbstraction(npoint=16, radius=0.4, nsample=8, in_channel=in_channel, mlp=[16, 16, 32],
                                          group_all=False)
        self.sa2 = PointNetSetAbstraction(npoint=None, radius=None, nsample=None, in_channel=32 + 3, mlp=[32, EMB],
                                          group_all=True)
        self.fc1 = nn.Linear(EMB, 32)
        self.bn1 = nn.BatchNorm1d(32)
        self.drop1 = nn.Dropout(0.4)
        self.fc2 = nn.Linear(32, num_class)

    def forward(self, xyz):
        B, _, _ = xyz.shape
        if self.normal_channel:
            norm = xyz[:, 3:, :]
            xyz = xyz[:, :3, :]
        else:
            norm = None
        l1_xyz, l1_points = self.sa1(xyz, norm)
        l2_xyz, l2_points = self.sa2(l1_xyz, l1_points)
        x = l2_points.view(B, EMB)
        x = self.drop1(F.relu(self.bn1(self.fc1(x))))
        x = self.fc2(x)
        x = F.log_softmax(x, -1)
        return x, l2_points


class get_loss(nn.Module):
    def __init__(self):
        super(get_loss, self).__init__()

    def forward(self, pred, target, trans_feat):
        total_loss = F.nll_loss(pred, target)
        return total_loss


def random_point_dropout(batch_pc, max_dropout_ratio=0.875):
    for b in range(batch_pc.shape[0]):
        dropout_ratio = np.random.random() * max_dropout_ratio  # 0~0.875
        drop_idx = np.where(np.random.random((batch_pc.shape[1])) <= dropout_ratio)[0]
        if len(drop_idx) > 0:
            batch_pc[b, drop_idx, :] = batch_pc[b, 0, :]  # set to the first point
    return batch_pc


def random_scale_point_cloud(batch_data, scale_low=0.8, scale_high=1.25):
    B, N, C = batch_data.shape
    scales = np.random.uniform(scale_low, scale_high, B)
    for batch_index in range(B):
        batch_data[batch_index, :, :] *= scales[batch_index]
    return batch_data


def shift_point_cloud(batch_data, shift_range=0.1):
    B, N, C = batch_data.shape
    shifts = np.random.uniform(-shift_range, shift_range, (B, 3))
    for batch_index in range(B):
        batch_data[batch_index, :, :] += shifts[batch_index, :]
    return batch_data


def test(model, loader, num_class=CLASSES):
    mean_correct = []
    class_acc = np.zeros((num_class, 3))
    classifier = model.eval()
    for j, (points, target) in enumerate(loader):
        target = target[:, 0]
        points = points.transpose(2, 1)
        pred, _ = classifier(points)
        pred_choice = pred.data.max(1)[1]
        for cat in np.unique(target.cpu()):
            classacc = pred_choice[target == cat].eq(target[target == cat].long().data).cpu().sum()
            class_acc[cat, 0] += classacc.item() / float(points[target == cat].size()[0])
            class_acc[cat, 1] += 1
        correct = pred_choice.eq(target.long().data).cpu().sum()
        mean_correct.append(correct.item() / float(points.size()[0]))
    class_acc[:, 2] = class_acc[:, 0] / class_acc[:, 1]
    class_acc = np.mean(class_acc[:, 2])
    instance_acc = np.mean(mean_correct)
    return instance_acc, class_acc


# ---------------------------------------------------------------- training
classifier = PointNetCls(k=CLASSES, feature_transform=True)
segmenter = PointNetDenseCls(k=2, feature_transform=True)
model = DGCNN(k=8, emb_dims=32, dropout=0.5, output_channels=CLASSES)
pointnet2 = get_model(CLASSES)
share_initial_weights({"pointnet": classifier, "pointnet_seg": segmenter, "dgcnn": model, "pointnet2": pointnet2})

# PointNet (fxia22)
dataset = ShapeDataset(train_points, train_labels)
test_dataset = ShapeDataset(test_points, test_labels, data_augmentation=False)
dataloader = data.DataLoader(dataset, batch_size=BATCH, shuffle=True, num_workers=0)
testdataloader = data.DataLoader(test_dataset, batch_size=BATCH, shuffle=False, num_workers=0)
num_batch = len(dataset) / BATCH


optimizer = optim.Adam(classifier.parameters(), lr=0.01, betas=(0.9, 0.999))
scheduler = optim.lr_scheduler.StepLR(optimizer, step_size=2, gamma=0.5)
for epoch in range(4):
    for i, (points, target) in enumerate(dataloader, 0):
        target = target[:, 0]
        points = points.transpose(2, 1)
        optimizer.zero_grad()
        classifier = classifier.train()
        pred, trans, trans_feat = classifier(points)
        loss = F.nll_loss(pred, target)
        reg = feature_transform_regularizer(trans_feat)
        loss += reg * 0.001
        loss.backward()
        optimizer.step()
        pred_choice = pred.data.max(1)[1]
        correct = pred_choice.eq(target.data).cpu().sum()
        if i % 2 == 0:
            print('[%d: %d/%d] train loss: %f accuracy: %f reg: %f' % (
                epoch, i, num_batch, loss.item(), correct.item() / float(BATCH), reg.item()))
    scheduler.step()
    print(f"epoch {epoch} lr {scheduler.get_last_lr()[0]:.6f} trans det {torch.det(trans).mean().item():.6f}")

total_correct = 0
total_testset = 0
classifier = classifier.eval()
with torch.no_grad():
    for i, (points, target) in enumerate(testdataloader, 0):
        target = target[:, 0]
        points = points.transpose(2, 1)
        pred, trans, _ = classifier(points)
        pred_choice = pred.data.max(1)[1]
        correct = pred_choice.eq(target.data).cpu().sum()
        total_correct += correct.item()
        total_testset += points.size()[0]
        print(f"test batch {i} nll {F.nll_loss(pred, target).item():.6f} "
              f"ortho {(trans @ trans.transpose(1, 2) - torch.eye(3)).abs().max().item():.6f}")
print("final accuracy {:.6f}".format(total_correct / float(total_testset)))
print("learnt input transform of the last test cloud:", trans[-1], sep="\n")

# the dense head: label each point by whether it lies above its cloud's centre (invariant to the rotation about y)
optimizer = optim.Adam(segmenter.parameters(), lr=0.01)
for epoch in range(2):
    for i, (points, target) in enumerate(dataloader, 0):
        seg_target = (points[:, :, 1] > 0).long()
        points = points.transpose(2, 1)
        optimizer.zero_grad()
        segmenter = segmenter.train()
        pred, trans, trans_feat = segmenter(points)
        pred = pred.view(-1, 2)
        seg_target = seg_target.view(-1, 1)[:, 0]
        loss = F.nll_loss(pred, seg_target) + feature_transform_regularizer(trans_feat) * 0.001
        loss.backward()
        optimizer.step()
        pred_choice = pred.data.max(1)[1]
        correct = pred_choice.eq(seg_target.data).cpu().sum()
        print('seg [%d: %d] train loss: %f accuracy: %f' % (epoch, i, loss.item(),
                                                            correct.item() / float(BATCH * NUM_POINTS)))
segmenter.eval()
with torch.no_grad():
    points = torch.from_numpy(test_points).transpose(2, 1)
    pred, _, _ = segmenter(points)
    pred_choice = pred.data.max(2)[1]
    seg_target = (points[:, 1, :] > 0).long()
    shape_ious = []
    for shape_idx in range(seg_target.size(0)):
        parts = range(2)
        part_ious = []
        for part in parts:
            I = np.sum(np.logical_and(pred_choice[shape_idx].numpy() == part, seg_target[shape_idx].numpy() == part))
            U = np.sum(np.logical_or(pred_choice[shape_idx].numpy() == part, seg_target[shape_idx].numpy() == part))
            iou = 1 if U == 0 else I / float(U)
            part_ious.append(iou)
        shape_ious.append(np.mean(part_ious))
    print("mIOU for the dense head: {:.6f}".format(np.mean(shape_ious)))

# DGCNN
train_loader = data.DataLoader(ModelNet40(train_points, train_labels), batch_size=BATCH, shuffle=True,
                               drop_last=True)
test_loader = data.DataLoader(ModelNet40(test_points, test_labels, partition='test'), batch_size=BATCH,
                              shuffle=False, drop_last=False)
print(f"dgcnn state_dict keys {len(model.state_dict())} parameters {sum(p.numel() for p in model.parameters())}")
opt = optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)
scheduler = optim.lr_scheduler.CosineAnnealingLR(opt, 3, eta_min=0.001)
criterion = cal_loss
for epoch in range(3):
    train_loss = 0.0
    count = 0.0
    model.train()
    train_pred = []
    train_true = []
    for points, label in train_loader:
        points, label = points.to('cpu'), label.to('cpu').squeeze()
        points = points.permute(0, 2, 1)
        batch_size = points.size()[0]
        opt.zero_grad()
        logits = model(points)
        loss = criterion(logits, label)
        loss.backward()
        opt.step()
        preds = logits.max(dim=1)[1]
        count += batch_size
        train_loss += loss.item() * batch_size
        train_true.append(label.cpu().numpy())
        train_pred.append(preds.detach().cpu().numpy())
    scheduler.step()
    train_true = np.concatenate(train_true)
    train_pred = np.concatenate(train_pred)
    outstr = 'Train %d, loss: %.6f, train acc: %.6f, lr: %.6f' % (
        epoch, train_loss * 1.0 / count, np.mean(train_true == train_pred), scheduler.get_last_lr()[0])
    print(outstr)

    test_loss = 0.0
    count = 0.0
    model.eval()
    test_pred = []
    test_true = []
    with torch.no_grad():
        for points, label in test_loader:
            points, label = points.to('cpu'), label.to('cpu').squeeze()
            points = points.permute(0, 2, 1)
            batch_size = points.size()[0]
            logits = model(points)
            loss = criterion(logits, label)
            preds = logits.max(dim=1)[1]
            count += batch_size
            test_loss += loss.item() * batch_size
            test_true.append(label.cpu().numpy())
            test_pred.append(preds.detach().cpu().numpy())
    test_true = np.concatenate(test_true)
    test_pred = np.concatenate(test_pred)
    per_class = [np.mean(test_pred[test_true == c] == c) for c in range(CLASSES)]
    print('Test %d, loss: %.6f, test acc: %.6f, test avg acc: %.6f' % (
        epoch, test_loss * 1.0 / count, np.mean(test_true == test_pred), np.mean(per_class)))

# PointNet++
criterion = get_loss()
optimizer = torch.optim.Adam(pointnet2.parameters(), lr=0.01, betas=(0.9, 0.999), eps=1e-08, weight_decay=1e-4)
scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.7)
for epoch in range(3):
    mean_correct = []
    pointnet2 = pointnet2.train()
    for batch_id, (points, target) in enumerate(dataloader, 0):
        optimizer.zero_grad()
        points = points.data.numpy()
        points = random_point_dropout(points)
        points[:, :, 0:3] = random_scale_point_cloud(points[:, :, 0:3])
        points[:, :, 0:3] = shift_point_cloud(points[:, :, 0:3])
        points = torch.Tensor(points)
        target = target[:, 0]
        points = points.transpose(2, 1)
        pred, trans_feat = pointnet2(points)
        loss = criterion(pred, target.long(), trans_feat)
        pred_choice = pred.data.max(1)[1]
        correct = pred_choice.eq(target.long().data).cpu().sum()
        mean_correct.append(correct.item() / float(points.size()[0]))
        loss.backward()
        optimizer.step()
        print(f"pointnet2 epoch {epoch} batch {batch_id} loss {loss.item():.6f}")
    scheduler.step()
    train_instance_acc = np.mean(mean_correct)
    with torch.no_grad():
        instance_acc, class_acc = test(pointnet2.eval(), testdataloader)
    print('Train Instance Accuracy: %f Test Instance Accuracy: %f, Class Accuracy: %f' % (
        train_instance_acc, instance_acc, class_acc))

with torch.no_grad():
    xyz = torch.from_numpy(test_points[:2])
    fps = farthest_point_sample(xyz, 8)
    spread = square_distance(index_points(xyz, fps), index_points(xyz, fps))
    print(f"fps indices {fps.tolist()} min pairwise {spread[spread > 1e-6].min().item():.6f}")
